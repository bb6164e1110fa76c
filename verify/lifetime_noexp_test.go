package verify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestMaxLifetimeNoExp (red team): a token without exp, of an issuer that
// does not require it (RequiredClaims: [] / required_claims: []), passed
// MaxLifetime: checkLifetime skipped a zero exp. It lives forever — past
// every revocation entry that names it, which is what max_lifetime (the
// revocation retention by default) exists to prevent: revoked by jti, it
// passed again once the entry's retention was over. It is now
// lifetime_exceeded.
func TestMaxLifetimeNoExp(t *testing.T) {
	is := issuerA(allKeys(t))
	is.MaxLifetime = time.Hour
	is.RequiredClaims = []string{}
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}})
	for name, extra := range map[string]map[string]any{
		"no-exp":        {"exp": nil},
		"no-exp-no-iat": {"exp": nil, "iat": nil},
	} {
		if _, err := v.Verify(context.Background(), mint("RS256", "k-RS256", extra)); !errors.Is(err, verify.ErrLifetimeExceeded) {
			t.Errorf("%s: Verify() = %v, want lifetime_exceeded (MaxLifetime %s, the token never expires)", name, err, is.MaxLifetime)
		}
	}
	// Without MaxLifetime, a token without exp that is not required passes.
	is.MaxLifetime = 0
	v = newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}})
	if _, err := v.Verify(context.Background(), mint("RS256", "k-RS256", map[string]any{"exp": nil})); err != nil {
		t.Errorf("no MaxLifetime, no exp: Verify() = %v, want valid", err)
	}
}
