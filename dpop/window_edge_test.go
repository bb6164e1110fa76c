package dpop_test

import (
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestReplayAtWindowEdge: a proof whose iat is leeway ahead, first used
// at t0, is remembered until t0+MaxAge+leeway. At exactly that instant the
// store answers fresh (now is not before its expiry), so its iat must be
// out of the window there (age == MaxAge is refused), or the same proof
// would be accepted twice.
func TestReplayAtWindowEdge(t *testing.T) {
	c := newChecker(t, dpop.Options{})
	jkt := thumb(t, testkeys.EC256A)
	p := proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": t0.Add(30 * time.Second).Unix()})
	if _, err := c.Check(t.Context(), input(p, jkt), t0); err != nil {
		t.Fatalf("first use: %v", err)
	}
	edge := t0.Add(dpop.DefaultMaxAge + 30*time.Second)
	if _, err := c.Check(t.Context(), input(p, jkt), edge.Add(-time.Nanosecond)); err == nil {
		t.Fatalf("replay 1ns before the edge accepted")
	}
	if _, err := c.Check(t.Context(), input(p, jkt), edge); err == nil {
		t.Errorf("the same proof (same jti) is accepted again at t0+MaxAge+leeway")
	}
}
