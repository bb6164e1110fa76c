package dpop_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/verify"
)

// TestRaisedMaxAgeKeepsReplays: a proof used under MaxAge 10s is
// remembered for 10s + leeway; a reload to MaxAge 60s over the same store
// must not accept it again once that entry is gone, while a proof issued
// after the reload gets the whole new MaxAge, over the same store or
// another one; a lowered MaxAge needs nothing.
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
		// The old store is asked about the proofs of its time
		// (TestSwitchedStoreKeepsReplays), but its entries were kept 10s
		// + leeway only: the old max_age holds there too.
		st := store(t)
		old := newChecker(t, dpop.Options{MaxAge: 10 * time.Second, Replay: st})
		if _, err := old.Check(t.Context(), input(used, jkt), t0); err != nil {
			t.Fatalf("first use: %v", err)
		}
		old.Retire(reloadAt)
		next := newChecker(t, dpop.Options{MaxAge: time.Minute, Replay: store(t), Replaces: old})
		if _, err := next.Check(t.Context(), input(used, jkt), replayAt); err == nil {
			t.Fatal("over another store, a proof used before the reload is accepted again after its old entry expired")
		}
	})
	t.Run("raised-old-max-age-is-the-bound", func(t *testing.T) {
		// As a checker refuses a proof once iat is max_age old (>=), the
		// old max_age holds a proof of the reload's time from the same
		// instant on: 10s old is refused, 9s old is not.
		st := store(t)
		old := newChecker(t, dpop.Options{MaxAge: 10 * time.Second, Replay: st})
		next := newChecker(t, dpop.Options{MaxAge: time.Minute, Replay: st, Replaces: old})
		for _, tc := range []struct {
			jti  string
			age  time.Duration
			want bool
		}{{"nine", 9 * time.Second, true}, {"ten", 10 * time.Second, false}} {
			p := proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": tc.jti, "iat": reloadAt.Unix()})
			_, err := next.Check(t.Context(), input(p, jkt), reloadAt.Add(tc.age))
			if (err == nil) != tc.want || (err != nil && !errors.Is(err, verify.ErrInvalidDPoPProof)) {
				t.Errorf("Check() of a proof %s old = %v, want accepted %t", tc.age, err, tc.want)
			}
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

// downLookup is a replay store whose lookups fail, as a Redis that is
// down; it counts them.
type downLookup struct{ asked atomic.Int64 }

func (*downLookup) Use(context.Context, [32]byte, time.Duration, time.Time) (bool, error) {
	return false, errors.New("connection refused")
}

func (d *downLookup) Used(context.Context, [32]byte, time.Time) (bool, error) {
	d.asked.Add(1)
	return false, errors.New("connection refused")
}

// TestSwitchedStoreKeepsReplays: a checker over another store than the
// one it replaces (a reload from memory to Redis, or to another Redis)
// asks the old store, read only, about the proofs the old checker may
// have used: a proof used before the switch is refused after it, also
// after a second switch; a fresh proof passes and is recorded in the new
// store; an old store that cannot answer refuses (keys_unavailable) the
// proofs of its time and is not asked about later ones.
func TestSwitchedStoreKeepsReplays(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	reloadAt := t0.Add(5 * time.Second)
	at := func(jti string, iat time.Time) string {
		return proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": jti, "iat": iat.Unix()})
	}
	// use checks p at now with c and fails the test unless the outcome
	// is want (nil: accepted).
	use := func(t *testing.T, c *dpop.Checker, p string, now time.Time, want error) {
		t.Helper()
		_, err := c.Check(t.Context(), input(p, jkt), now)
		switch {
		case want == nil && err != nil:
			t.Fatalf("Check() = %v, want accepted", err)
		case want != nil && !errors.Is(err, want):
			t.Fatalf("Check() = %v, want %v", err, want)
		}
	}

	t.Run("switch", func(t *testing.T) {
		old := newChecker(t, dpop.Options{Replay: memStore(t)})
		used := at("used-before", t0)
		use(t, old, used, t0, nil)
		old.Retire(reloadAt)
		next := newChecker(t, dpop.Options{Replay: memStore(t), Replaces: old})
		use(t, next, used, reloadAt.Add(time.Second), dpop.ErrReplayed)
		fresh := at("fresh", reloadAt)
		use(t, next, fresh, reloadAt.Add(time.Second), nil)
		use(t, next, fresh, reloadAt.Add(2*time.Second), dpop.ErrReplayed) // recorded in the new store
	})
	t.Run("second-switch", func(t *testing.T) {
		first := newChecker(t, dpop.Options{Replay: memStore(t)})
		usedFirst := at("used-first", t0)
		use(t, first, usedFirst, t0, nil)
		first.Retire(reloadAt)
		second := newChecker(t, dpop.Options{Replay: memStore(t), Replaces: first})
		usedSecond := at("used-second", reloadAt)
		use(t, second, usedSecond, reloadAt, nil)
		again := reloadAt.Add(10 * time.Second)
		second.Retire(again)
		third := newChecker(t, dpop.Options{Replay: memStore(t), Replaces: second})
		use(t, third, usedFirst, again.Add(time.Second), dpop.ErrReplayed)
		use(t, third, usedSecond, again.Add(time.Second), dpop.ErrReplayed)
	})
	t.Run("old-store-down", func(t *testing.T) {
		down := &downLookup{}
		old := newChecker(t, dpop.Options{Replay: down})
		old.Retire(reloadAt)
		next := newChecker(t, dpop.Options{Replay: memStore(t), Replaces: old})
		use(t, next, at("before", t0), reloadAt, verify.ErrKeysUnavailable)
		margin := reloadAt.Add(30*time.Second + time.Minute) // the input's leeway, and a minute
		use(t, next, at("within-margin", margin), margin, verify.ErrKeysUnavailable)
		asked := down.asked.Load()
		later := margin.Add(time.Second)
		use(t, next, at("after", later), later, nil)
		if got := down.asked.Load(); got != asked {
			t.Errorf("the old store was asked about a proof issued after the margin (%d lookups, want %d)", got, asked)
		}
	})
	t.Run("not-retired", func(t *testing.T) {
		// Without Retire, the successor's first check stands for it.
		old := newChecker(t, dpop.Options{Replay: memStore(t)})
		used := at("used-before", t0)
		use(t, old, used, t0, nil)
		next := newChecker(t, dpop.Options{Replay: memStore(t), Replaces: old})
		use(t, next, used, t0.Add(time.Second), dpop.ErrReplayed)
	})
}

// memStore is a replay store of 100 entries for a test.
func memStore(t *testing.T) *replay.Memory {
	t.Helper()
	m, err := replay.NewMemory(100)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
