package verify_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestVerifyESTokens: ES tokens minted by golang-jwt verify through the
// verifier, and the same tokens with a tampered signature are bad_signature.
func TestVerifyESTokens(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	enc := base64.RawURLEncoding
	for _, alg := range []string{"ES256", "ES384", "ES512"} {
		t.Run(alg, func(t *testing.T) {
			n := testkeys.SigningKey(alg).(*ecdsa.PrivateKey).Curve.Params().N
			for i := range 4 {
				tok := mint(alg, kidFor(alg), map[string]any{"jti": fmt.Sprint(i)})
				if _, err := v.Verify(context.Background(), tok); err != nil {
					t.Fatalf("Verify(token %d) = %v, want nil", i, err)
				}
				dot := strings.LastIndexByte(tok, '.')
				sig := segment(t, tok, 2)
				size := len(sig) / 2
				tampered := []struct {
					name string
					sig  []byte
				}{
					{"r-zero", append(make([]byte, size), sig[size:]...)},
					{"s-zero", append(bytes.Clone(sig[:size]), make([]byte, size)...)},
					{"r-is-n", append(n.FillBytes(make([]byte, size)), sig[size:]...)},
					{"s-is-n", append(bytes.Clone(sig[:size]), n.FillBytes(make([]byte, size))...)},
					{"swapped", append(bytes.Clone(sig[size:]), sig[:size]...)},
					{"truncated", sig[:len(sig)-1]},
					{"extended", append(bytes.Clone(sig), 1)},
					{"empty", nil},
				}
				for _, tc := range tampered {
					bad := tok[:dot+1] + enc.EncodeToString(tc.sig)
					if _, err := v.Verify(context.Background(), bad); !errors.Is(err, verify.ErrBadSignature) {
						t.Errorf("Verify(token %d, %s) = %v, want %v", i, tc.name, err, verify.ErrBadSignature)
					}
				}
			}
		})
	}
}
