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
	tok := mint("RS256", "k-RS256", map[string]any{"iat": nil, "exp": t0.Add(80 * time.Minute).Unix()})

	plain := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}})
	if _, err := plain.VerifyAt(ctx, tok, t0); !errors.Is(err, verify.ErrLifetimeExceeded) {
		t.Fatalf("uncached at t0 = %v, want lifetime_exceeded (exp − now 80m > 1h)", err)
	}
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, TokenCache: verify.TokenCacheOptions{MaxEntries: 16}})
	if _, err := v.VerifyAt(ctx, tok, later); err != nil {
		t.Fatalf("at t0+30m = %v, want valid (exp − now 50m)", err)
	}
	if _, err := v.VerifyAt(ctx, tok, t0); !errors.Is(err, verify.ErrLifetimeExceeded) {
		t.Errorf("cached, at t0 = %v, want lifetime_exceeded as uncached", err)
	}
}
