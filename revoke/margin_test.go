package revoke

import (
	"testing"

	"github.com/jwksverify/jwksverify/verify"
)

// TestMarginsCoverTheLargestLeeway holds the two margins to the verifier's
// largest leeway: a cut-off may be as far ahead as an issuer's clock may
// run (maxCutoffAhead), and an entry outlives its retention by two leeways
// (expiryMargin), so that a token of max_lifetime accepted at its latest
// (iat a leeway ahead, exp a leeway past) is still named by its entry.
// Raising verify.MaxLeeway without these would let a revoked token pass
// again after its entry expired.
func TestMarginsCoverTheLargestLeeway(t *testing.T) {
	if maxCutoffAhead < verify.MaxLeeway {
		t.Errorf("maxCutoffAhead = %v, below verify.MaxLeeway %v", maxCutoffAhead, verify.MaxLeeway)
	}
	if expiryMargin < 2*verify.MaxLeeway {
		t.Errorf("expiryMargin = %v, below twice verify.MaxLeeway (%v)", expiryMargin, 2*verify.MaxLeeway)
	}
}
