package jwks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/verify"
)

// Tokens the verifier refuses at the key or header level, on the same
// published set, get no key from the Keyfunc either: a key bound to another
// issuer (with a kid, without, and through VerificationKeySet) and crit.
func TestKeyfuncRefusesWhatTheVerifierRefuses(t *testing.T) {
	const tenantA, tenantB = "https://tenant-a.example/", "https://tenant-b.example/"
	bound, err := cache.NewKey(testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Kid: "a-key", Issuer: tenantA})
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := cache.NewKey(testkeys.Public(testkeys.RSA2048B), cache.KeyMeta{Kid: "rs-only", Alg: "RS256"})
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	f := startKF(t, clk, jwks.Options{StaticKeys: []*cache.Key{bound, pinned}}, false)
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{Issuer: tenantB, Keys: f.Keys(), Algorithms: []string{"RS256", "PS256"}}},
		Now:     clk.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	mint := func(alg, signer string, header map[string]any) string {
		return testkeys.Mint(alg, testkeys.Private(signer), header, map[string]any{
			"iss": tenantB, "sub": "mallory", "iat": kfStart.Unix(), "exp": kfStart.Add(time.Hour).Unix(),
		})
	}
	k := f.Keyfunc()
	kidless := func(tok *jwt.Token) (any, error) { return k.VerificationKeySet(context.Background()) }
	for _, tc := range []struct {
		name    string
		token   string
		keyfunc jwt.Keyfunc
		alg     string
		want    error // the verifier's class
	}{
		// A key bound to tenant A (the JWK "issuer" member) signs a token of tenant B.
		{"key-bound-to-another-issuer", mint("RS256", testkeys.RSA2048A, map[string]any{"kid": "a-key"}), k.Keyfunc, "RS256", verify.ErrWrongIssuer},
		// (the verifier skips the bound key and tries the other RS256 key: bad_signature)
		{"kidless-key-bound-to-another-issuer", mint("RS256", testkeys.RSA2048A, nil), k.Keyfunc, "RS256", verify.ErrBadSignature},
		// VerificationKeySet: a JWK pinned to RS256 verifies PS256, and a
		// token naming another kid verifies with whichever key signs it.
		// Header level, for completeness: golang-jwt ignores crit; the verifier refuses it.
		{"vks-leaves-out-keys-bound-to-an-issuer", mint("RS256", testkeys.RSA2048A, nil), kidless, "RS256", verify.ErrBadSignature},
		{"crit-header", mint("RS256", testkeys.RSA2048B, map[string]any{"kid": "rs-only", "crit": []string{"exp"}}), k.Keyfunc, "RS256", verify.ErrUnsupportedCrit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, verr := v.Verify(context.Background(), tc.token)
			if !errors.Is(verr, tc.want) {
				t.Fatalf("verifier: %v, want %v", verr, tc.want)
			}
			tok, err := jwt.Parse(tc.token, tc.keyfunc, jwt.WithValidMethods([]string{tc.alg}),
				jwt.WithIssuer(tenantB), jwt.WithTimeFunc(clk.now))
			if err == nil && tok.Valid {
				t.Errorf("golang-jwt with the adapter accepted a token the verifier refuses (%v)", verr)
			}
		})
	}
}
