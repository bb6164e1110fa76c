package dpop_test

import (
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
)

// TestSwitchedStoreInFlightOldChecker: after a reload that
// switches stores, requests of the old generation still running check
// with the retired checker (the lookup cutoff allows a minute for them).
// A proof first accepted by the successor (recorded in the new store only)
// and then presented to such a request is recorded in the old store as
// fresh: accepted twice.
func TestSwitchedStoreInFlightOldChecker(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	mem := func() *replay.Memory {
		m, err := replay.NewMemory(100)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	reloadAt := t0.Add(5 * time.Second)
	old := newChecker(t, dpop.Options{Replay: mem()})
	next := newChecker(t, dpop.Options{Replay: mem(), Replaces: old})
	old.RetireTo(reloadAt, next)
	p := proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "raced", "iat": reloadAt.Unix()})
	if _, err := next.Check(t.Context(), input(p, jkt), reloadAt.Add(time.Second)); err != nil {
		t.Fatalf("first use at the successor: %v", err)
	}
	if _, err := old.Check(t.Context(), input(p, jkt), reloadAt.Add(2*time.Second)); err == nil {
		t.Error("the same proof at a request of the old generation still running: accepted twice")
	}
}
