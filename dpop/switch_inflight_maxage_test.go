package dpop_test

import (
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
)

// TestSwitchedStoreInFlightOldCheckerShorterMaxAge: a reload that switches
// stores and lowers max_age. A request of the old generation still running
// accepts a proof by the old max_age and records it through the successor,
// whose store keeps it only for the successor's (shorter) max_age: a
// second old-generation request presenting it after that is accepted again
// (before RetireTo the old store kept it for the old max_age).
func TestSwitchedStoreInFlightOldCheckerShorterMaxAge(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	mem := func() *replay.Memory {
		m, err := replay.NewMemory(100)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, same := range []bool{false, true} {
		name := "switched-store"
		if same {
			name = "same-store"
		}
		t.Run(name, func(t *testing.T) {
			reloadAt := t0.Add(5 * time.Minute)
			oldStore, nextStore := mem(), mem()
			if same {
				nextStore = oldStore
			}
			old := newChecker(t, dpop.Options{Replay: oldStore, MaxAge: 5 * time.Minute})
			next := newChecker(t, dpop.Options{Replay: nextStore, Replaces: old, MaxAge: time.Second})
			old.RetireTo(reloadAt, next)
			p := proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "slow", "iat": reloadAt.Add(-2 * time.Minute).Unix()})
			in := input(p, jkt)
			in.Leeway = 0
			if _, err := old.Check(t.Context(), in, reloadAt.Add(time.Second)); err != nil {
				t.Fatalf("first use at an old-generation request: %v", err)
			}
			if _, err := old.Check(t.Context(), in, reloadAt.Add(5*time.Second)); err == nil {
				t.Error("the same proof at another old-generation request 4 s later: accepted twice")
			}
		})
	}
}
