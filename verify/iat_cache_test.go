package verify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestCachedVerdictHoldsIAT: a cached verdict is re-checked at the instant
// asked (VerifyAt's now) as nbf is: a token whose iat is ahead of an
// earlier now by more than the leeway is not_yet_valid there, cache or
// not (an ID token's iat rule of SPEC, and the access token's of
// DECISIONS), as the uncached verifier answers.
func TestCachedVerdictHoldsIAT(t *testing.T) {
	ctx := context.Background()
	is := idIssuer(allKeys(t), "")
	is.Audiences = []string{clientID}
	in := verify.IDTokenChecks{Nonce: idNonce}
	// iat an hour ahead of t0, and one second past the leeway.
	for _, tt := range []struct {
		kind  string
		ahead time.Duration
	}{
		{"id_token", time.Hour},
		{"access_token", time.Hour},
		{"id_token", verify.DefaultLeeway + time.Second},
		{"access_token", verify.DefaultLeeway + time.Second},
	} {
		kind, later := tt.kind, t0.Add(tt.ahead)
		t.Run(kind+"/"+tt.ahead.String(), func(t *testing.T) {
			extra := map[string]any{"iat": later.Unix(), "exp": later.Add(time.Hour).Unix(), "auth_time": later.Unix()}
			tok := mintID("ES256", nil, extra)
			check := func(v *verify.Verifier, now time.Time) error {
				if kind == "id_token" {
					_, err := v.VerifyIDTokenAt(ctx, tok, now, in)
					return err
				}
				_, err := v.VerifyAt(ctx, tok, now)
				return err
			}
			plain := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}})
			if err := check(plain, t0); !errors.Is(err, verify.ErrNotYetValid) {
				t.Fatalf("uncached at t0 = %v, want not_yet_valid", err)
			}
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, TokenCache: verify.TokenCacheOptions{MaxEntries: 16}})
			if err := check(v, later); err != nil {
				t.Fatalf("at iat = %v, want nil", err)
			}
			if err := check(v, t0); !errors.Is(err, verify.ErrNotYetValid) {
				t.Errorf("cached, at t0 (iat %s ahead) = %v, want not_yet_valid", tt.ahead, err)
			}
		})
	}
}
