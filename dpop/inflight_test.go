package dpop_test

import (
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestReplayReachingTheStoreLate: a check reads its clock (now) when the
// request begins and reaches the replay store later (the token verified
// first, a Redis round trip); meanwhile the store's own time goes on (a
// concurrent check with a later now purges the memory store; Redis expires
// keys on its own clock). A replay of a proof whose iat is still within
// max_age at the replay's now, but whose entry the store let go by the
// time the replay reached it, must still be refused. With leeway 0s
// (CONFIG: "no clock skew tolerated") the entry outlived the iat window by
// only how long after its iat the proof was first used: a replay whose
// check took a millisecond longer than that passed.
func TestReplayReachingTheStoreLate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leeway time.Duration
		delay  time.Duration // between the replay's clock reading and its store use
	}{
		{"no leeway, 1ms", -1, time.Millisecond},
		{"no leeway, 1s", -1, time.Second},
		{"no leeway, 10s", -1, 10 * time.Second},
		{"leeway 1s, 5s", time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(t, dpop.Options{})
			jkt := thumb(t, testkeys.EC256A)
			in := func(p string) dpop.Input {
				i := input(p, jkt)
				i.Leeway = tc.leeway
				return i
			}
			// Issued and first used at t0.
			p := proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": t0.Unix(), "jti": "late-1"})
			if _, err := c.Check(t.Context(), in(p), t0); err != nil {
				t.Fatalf("first use: %v", err)
			}
			// The replay reads its clock just inside the window...
			replayNow := t0.Add(dpop.DefaultMaxAge - time.Millisecond)
			// ...and, before it reaches the store, another request
			// whose clock reads delay later is checked (it purges what
			// expired by then).
			other := proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": replayNow.Add(tc.delay).Unix(), "jti": "late-other"})
			if _, err := c.Check(t.Context(), in(other), replayNow.Add(tc.delay)); err != nil {
				t.Fatalf("other proof: %v", err)
			}
			if _, err := c.Check(t.Context(), in(p), replayNow); err == nil {
				t.Errorf("a replay checked at %s after iat, which reached the store %s later, was accepted", dpop.DefaultMaxAge-time.Millisecond, tc.delay)
			}
		})
	}
}
