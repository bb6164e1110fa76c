package dpop_test

import (
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestSwitchedStoreInFlightOldChecker: after a reload that
// switches stores, requests of the old generation still running check
// with the retired checker (the lookup cutoff allows a minute for them).
// A proof first accepted by the successor (recorded in the new store only)
// and then presented to such a request is recorded in the old store as
// fresh: accepted twice.
func TestSwitchedStoreInFlightOldChecker(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	reloadAt := t0.Add(5 * time.Second)
	old := newChecker(t, dpop.Options{Replay: memStore(t)})
	next := newChecker(t, dpop.Options{Replay: memStore(t), Replaces: old})
	old.RetireTo(reloadAt, next)
	p := proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "raced", "iat": reloadAt.Unix()})
	if _, err := next.Check(t.Context(), input(p, jkt), reloadAt.Add(time.Second)); err != nil {
		t.Fatalf("first use at the successor: %v", err)
	}
	if _, err := old.Check(t.Context(), input(p, jkt), reloadAt.Add(2*time.Second)); err == nil {
		t.Error("the same proof at a request of the old generation still running: accepted twice")
	}
}

// TestSwitchedStoreInFlightOldCheckerShorterMaxAge: a reload that switches
// stores and lowers max_age. A request of the old generation still running
// accepts a proof by the old max_age and records it through the successor,
// whose store keeps it only for the successor's (shorter) max_age: a
// second old-generation request presenting it after that is accepted again
// (before RetireTo the old store kept it for the old max_age).
func TestSwitchedStoreInFlightOldCheckerShorterMaxAge(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	for _, same := range []bool{false, true} {
		name := "switched-store"
		if same {
			name = "same-store"
		}
		t.Run(name, func(t *testing.T) {
			reloadAt := t0.Add(5 * time.Minute)
			oldStore, nextStore := memStore(t), memStore(t)
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
