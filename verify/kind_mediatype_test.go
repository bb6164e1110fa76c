package verify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/verify"
)

// TestKindTypMediaType: a typ that names another kind as a media type
// (RFC 2045/6838: parameters after ';', optional white space around them)
// is that kind, and kinds never mix (SPEC "ID tokens and token kinds":
// typ values compare as media types).
func TestKindTypMediaType(t *testing.T) {
	tests := []struct {
		name            string
		typ             string
		access, idToken error
	}{
		{name: "introspection-charset", typ: "application/token-introspection+jwt; charset=utf-8", access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "introspection-param-nospace", typ: "token-introspection+jwt;v=1", access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "dpop-trailing-space", typ: "dpop+jwt ", access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "secevent-leading-space", typ: " application/secevent+jwt", access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "logout-param", typ: "logout+jwt ; charset=UTF-8", access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		// A typ only Unicode folding reads as another kind's (ſ U+017F,
		// the Kelvin sign U+212A) is still refused: some reader takes it
		// for that kind.
		{name: "secevent-long-s", typ: "\u017fecevent+jwt", access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "introspection-kelvin", typ: "application/to\u212aen-introspection+jwt", access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "at-jwt-charset-as-id", typ: "application/at+jwt; charset=utf-8", access: nil, idToken: verify.ErrWrongType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := idIssuer(allKeys(t), "")
			is.Audiences = []string{clientID}
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, TokenCache: verify.TokenCacheOptions{MaxEntries: 16}})
			tok := mintID("RS256", map[string]any{"typ": tt.typ}, nil)
			for range 2 {
				if _, err := v.VerifyAt(context.Background(), tok, t0); !errors.Is(err, tt.access) || (tt.access == nil) != (err == nil) {
					t.Errorf("VerifyAt(typ %q) = %v, want %v", tt.typ, err, tt.access)
				}
				if _, err := v.VerifyIDTokenAt(context.Background(), tok, t0, allInputs()); !errors.Is(err, tt.idToken) || (tt.idToken == nil) != (err == nil) {
					t.Errorf("VerifyIDTokenAt(typ %q) = %v, want %v", tt.typ, err, tt.idToken)
				}
			}
		})
	}
}
