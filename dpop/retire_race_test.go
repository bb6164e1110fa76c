package dpop_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
)

// gatedStore is a memory store whose first Use waits, after it was
// entered and before it records anything, until release is closed: a
// Redis EVAL still on its way when a reload swaps the checkers.
type gatedStore struct {
	*replay.Memory
	entered, release chan struct{}
	first            bool
}

func (g *gatedStore) Use(ctx context.Context, key [32]byte, ttl time.Duration, now time.Time) (bool, error) {
	if !g.first {
		g.first = true
		close(g.entered)
		<-g.release
	}
	return g.Memory.Use(ctx, key, ttl, now)
}

// TestRetiredCheckInFlightAtTheSwitch: a check of the old generation that
// was already at its own store when a reload switched stores (RetireTo)
// and a check of the new generation presenting the same proof meanwhile
// must not both be fresh. The new one asks the old store, which has not
// recorded the proof yet, and records it in its own; the old one then
// records it in the old store only: one proof, accepted twice.
func TestRetiredCheckInFlightAtTheSwitch(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	reloadAt := t0.Add(5 * time.Second)
	oldStore := &gatedStore{Memory: memStore(t), entered: make(chan struct{}), release: make(chan struct{})}
	old := newChecker(t, dpop.Options{Replay: oldStore})
	p := proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "in-flight", "iat": reloadAt.Unix()})

	oldErr := make(chan error, 1)
	go func() {
		_, err := old.Check(context.Background(), input(p, jkt), reloadAt)
		oldErr <- err
	}()
	<-oldStore.entered // the old check is at its store, past its successor lookup

	next := newChecker(t, dpop.Options{Replay: memStore(t), Replaces: old})
	old.RetireTo(reloadAt, next)
	_, nextErr := next.Check(t.Context(), input(p, jkt), reloadAt.Add(time.Second))
	close(oldStore.release)
	if err := <-oldErr; err == nil && nextErr == nil {
		t.Error("one proof accepted by the old generation's check in flight and by the new generation's")
	}
}
