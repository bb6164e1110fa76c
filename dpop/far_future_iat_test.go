package dpop_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestIATFarInTheFutureRefused: a proof whose iat is further ahead than a
// time.Duration can hold (about 292 years) is refused at dpop-iat like one
// a minute ahead. now.Sub(iat) saturates to the smallest Duration, whose
// negation is itself, so "-age > leeway" was false and such a proof passed:
// a pre-generated proof (RFC 9449 §11.2) valid for ever, accepted again
// each time its replay entry expired.
func TestIATFarInTheFutureRefused(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	for _, iat := range []any{
		t0.Add(time.Hour).Unix(),
		int64(20_000_000_000), // year 2603
		int64(99_999_999_999), // just under the NumericDate bound
		9.9e10,
	} {
		c := newChecker(t, dpop.Options{})
		p := proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": iat})
		steps, _, err := c.Explain(t.Context(), input(p, jkt), t0)
		if !errors.Is(err, verify.ErrInvalidDPoPProof) {
			t.Errorf("iat %v: err = %v, want invalid_dpop_proof", iat, err)
			continue
		}
		if last := steps[len(steps)-1]; last.Check != "dpop-iat" {
			t.Errorf("iat %v: failed at %s, want dpop-iat", iat, last.Check)
		}
	}
}
