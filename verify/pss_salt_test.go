package verify_test

import (
	"context"
	"crypto"
	"crypto/fips140"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestPSSSaltEqualsHash: PS256/384/512 accept a salt of the hash's length
// only (RFC 7518 §3.5), with the prepared and the standard RSA code alike.
func TestPSSSaltEqualsHash(t *testing.T) {
	payload := `{"iss":"` + issA + `","exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) + `}`
	for _, std := range []bool{false, true} {
		v := newVerifier(t, verify.Options{StandardCrypto: std, Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(t)}}})
		for _, tc := range []struct {
			alg  string
			hash crypto.Hash
		}{{"PS256", crypto.SHA256}, {"PS384", crypto.SHA384}, {"PS512", crypto.SHA512}} {
			// Explicit lengths: rsa.PSSSaltLengthAuto (0) signs with the
			// largest salt, except in FIPS 140-3 mode, where it is the hash's
			// length and longer salts are refused.
			for _, salt := range []int{1, 20, tc.hash.Size(), tc.hash.Size() + 1} {
				t.Run(fmt.Sprintf("std=%v/%s/salt=%d", std, tc.alg, salt), func(t *testing.T) {
					if salt > tc.hash.Size() && fips140.Enabled() {
						t.Skip("FIPS 140-3 mode signs no salt longer than the hash")
					}
					enc := base64.RawURLEncoding
					in := enc.EncodeToString([]byte(`{"alg":"`+tc.alg+`","kid":"k-`+tc.alg+`"}`)) + "." + enc.EncodeToString([]byte(payload))
					h := tc.hash.New()
					h.Write([]byte(in))
					priv := testkeys.SigningKey(tc.alg).(*rsa.PrivateKey)
					sig, err := rsa.SignPSS(rand.Reader, priv, tc.hash, h.Sum(nil), &rsa.PSSOptions{SaltLength: salt})
					if err != nil {
						t.Fatal(err)
					}
					_, err = v.Verify(context.Background(), in+"."+enc.EncodeToString(sig))
					if salt == tc.hash.Size() {
						if err != nil {
							t.Fatalf("Verify() = %v, want nil", err)
						}
						return
					}
					if !errors.Is(err, verify.ErrBadSignature) {
						t.Fatalf("Verify() = %v, want bad_signature", err)
					}
				})
			}
		}
	}
}
