package verify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// An issuer's Type matches a typ ignoring ASCII case only, as JOSE
// libraries compare media types (RFC 7515 §4.1.9): strings.EqualFold read
// ſ (U+017F) as s and the Kelvin sign (U+212A) as k, and strings.ToLower
// read a Type's Kelvin sign as k.
func TestTypeFoldsASCIIOnly(t *testing.T) {
	keys := allKeys(t)
	tests := []struct {
		name    string
		typ     string // the issuer's Type
		tokTyp  string
		wantErr error
	}{
		{"same", "ks+jwt", "ks+jwt", nil},
		{"ascii-case", "ks+jwt", "application/KS+JWT", nil},
		{"kelvin", "ks+jwt", "\u212as+jwt", verify.ErrWrongType},
		{"long-s", "ks+jwt", "k\u017f+jwt", verify.ErrWrongType},
		{"application-kelvin", "ks+jwt", "application/\u212aS+JWT", verify.ErrWrongType},
		{"type-kelvin", "\u212as+jwt", "ks+jwt", verify.ErrWrongType},
		{"type-kelvin-as-written", "\u212as+jwt", "\u212as+jwt", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, Type: tt.typ}}})
			tok := testkeys.Mint("ES256", testkeys.SigningKey("ES256"), map[string]any{"kid": "k-ES256", "typ": tt.tokTyp}, claims(nil))
			if _, err := v.Verify(context.Background(), tok); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify(typ %q, Type %q) = %v, want %v", tt.tokTyp, tt.typ, err, tt.wantErr)
			}
		})
	}
}
