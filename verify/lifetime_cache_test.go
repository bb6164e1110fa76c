package verify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestCachedVerdictHoldsLifetimeWithoutIAT: a token without iat is held
// to MaxLifetime by exp − now, which depends on the instant asked
// (VerifyAt's now). A verdict cached at a later now must not answer an
// earlier one at which the uncached verifier says lifetime_exceeded, as
// a cached verdict is already held to iat and nbf at the instant asked
// (TestCachedVerdictHoldsIAT).
func TestCachedVerdictHoldsLifetimeWithoutIAT(t *testing.T) {
	ctx := context.Background()
	is := issuerA(allKeys(t))
	is.MaxLifetime = time.Hour
	later := t0.Add(30 * time.Minute)
	// exp − t0 is above max_lifetime by 20 minutes, and by one second.
	for _, over := range []time.Duration{20 * time.Minute, time.Second} {
		t.Run(over.String(), func(t *testing.T) {
			tok := mint("RS256", "k-RS256", map[string]any{"iat": nil, "exp": t0.Add(time.Hour + over).Unix()})
			plain := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}})
			if _, err := plain.VerifyAt(ctx, tok, t0); !errors.Is(err, verify.ErrLifetimeExceeded) {
				t.Fatalf("uncached at t0 = %v, want lifetime_exceeded (exp − now 1h%s > 1h)", err, over)
			}
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, TokenCache: verify.TokenCacheOptions{MaxEntries: 16}})
			if _, err := v.VerifyAt(ctx, tok, later); err != nil {
				t.Fatalf("at t0+30m = %v, want valid (exp − now 30m%s)", err, over)
			}
			if _, err := v.VerifyAt(ctx, tok, t0); !errors.Is(err, verify.ErrLifetimeExceeded) {
				t.Errorf("cached, at t0 = %v, want lifetime_exceeded as uncached", err)
			}
		})
	}
}
