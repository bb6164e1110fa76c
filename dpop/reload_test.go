package dpop_test

import (
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
)

// TestRaisedMaxAgeKeepsReplays: a proof used under MaxAge 10s is
// remembered for 10s + leeway; a reload to MaxAge 60s over the same store
// must not accept it again once that entry is gone, while a proof issued
// after the reload gets the whole new MaxAge. A checker over another store
// inherits nothing, and a lowered MaxAge needs nothing.
func TestRaisedMaxAgeKeepsReplays(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	store := func(t *testing.T) dpop.ReplayStore {
		m, err := replay.NewMemory(100)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	used := proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "used-before"})
	reloadAt := t0.Add(5 * time.Second)
	replayAt := t0.Add(50 * time.Second) // old entry (10s + 30s leeway) gone, iat 50s old < 60s

	t.Run("raised", func(t *testing.T) {
		st := store(t)
		old := newChecker(t, dpop.Options{MaxAge: 10 * time.Second, Replay: st})
		if _, err := old.Check(t.Context(), input(used, jkt), t0); err != nil {
			t.Fatalf("first use: %v", err)
		}
		next := newChecker(t, dpop.Options{MaxAge: time.Minute, Replay: st, Replaces: old})
		fresh := proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "after", "iat": reloadAt.Add(dpop.DefaultMaxAge).Unix()})
		if _, err := next.Check(t.Context(), input(fresh, jkt), reloadAt.Add(dpop.DefaultMaxAge)); err != nil {
			t.Fatalf("a fresh proof after the reload: %v", err)
		}
		if _, err := next.Check(t.Context(), input(used, jkt), replayAt); err == nil {
			t.Fatal("a proof used before the reload is accepted again after its replay entry expired")
		}
		// Issued well after the reload (beyond the margin): the whole
		// new MaxAge applies.
		late := t0.Add(20 * time.Minute)
		lateProof := proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "late", "iat": late.Unix()})
		if _, err := next.Check(t.Context(), input(lateProof, jkt), late.Add(50*time.Second)); err != nil {
			t.Fatalf("a proof issued after the reload, 50s old under max_age 60s: %v", err)
		}
		// A second reload keeps the first one's limit.
		third := newChecker(t, dpop.Options{MaxAge: 2 * time.Minute, Replay: st, Replaces: next})
		if _, err := third.Check(t.Context(), input(used, jkt), replayAt); err == nil {
			t.Fatal("after a second reload, the proof used before the first is accepted again")
		}
	})
	t.Run("other-store", func(t *testing.T) {
		old := newChecker(t, dpop.Options{MaxAge: 10 * time.Second, Replay: store(t)})
		next := newChecker(t, dpop.Options{MaxAge: time.Minute, Replay: store(t), Replaces: old})
		if _, err := next.Check(t.Context(), input(used, jkt), replayAt); err != nil {
			t.Fatalf("a new store has no entries to outlive: %v", err)
		}
	})
	t.Run("lowered", func(t *testing.T) {
		st := store(t)
		old := newChecker(t, dpop.Options{MaxAge: time.Minute, Replay: st})
		next := newChecker(t, dpop.Options{MaxAge: 10 * time.Second, Replay: st, Replaces: old})
		p := proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "lowered"})
		if _, err := next.Check(t.Context(), input(p, jkt), t0.Add(9*time.Second)); err != nil {
			t.Fatalf("9s old under max_age 10s: %v", err)
		}
	})
}
