package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/verify"
)

// switchPlans returns a loader of plans whose DPoP replay store is
// memory (redisURL "") or Redis at redisURL, with a retirement grace of
// 50ms (the retired Redis client of a reload was closed after it).
func switchPlans(t *testing.T) func(redisURL string) *config.Plan {
	jwksSrv := jwksServer(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	return func(redisURL string) *config.Plan {
		t.Helper()
		store := "dpop: {replay_store: memory}\n"
		if redisURL != "" {
			store = fmt.Sprintf("dpop: {replay_store: redis}\nredis: {url: %q}\n", redisURL)
		}
		p := writePlan(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
%sissuers:
  - issuer: https://idp.example/
    jwks_url: %s
    leeway: 5s
    sender_constraint: {dpop: optional}
`, store, jwksSrv.URL))
		p.HTTP.Write = 50 * time.Millisecond
		return p
	}
}

// checkProof checks in with the current generation's DPoP checker at now
// and fails the test unless the outcome is want (nil: accepted).
func checkProof(t *testing.T, l *Service, in dpop.Input, now time.Time, want error) {
	t.Helper()
	_, err := l.Server().DPoP().Check(context.Background(), in, now)
	switch {
	case want == nil && err != nil:
		t.Fatalf("Check() = %v, want accepted", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("Check() = %v, want %v", err, want)
	}
}

// TestReloadSwitchingReplayStoreKeepsReplays: a reload that moves the
// DPoP replay store (memory to Redis, Redis to memory, one Redis to
// another) started the new store empty, so a proof used just before the
// reload was accepted once more after it. The new checker asks the old
// store about the proofs of its time; fresh proofs pass and are recorded
// in the new store.
func TestReloadSwitchingReplayStoreKeepsReplays(t *testing.T) {
	redisA, redisB := redistest.Start(t).URL(), redistest.Start(t).URL()
	for _, tt := range []struct {
		name  string
		plans []string // the first plan's store, then each reload's
	}{
		{"memory-to-redis", []string{"", redisA}},
		{"redis-to-memory", []string{redisA, ""}},
		{"redis-to-other-redis", []string{redisA, redisB}},
		{"second-switch", []string{redisA, redisB, ""}}, // the first store is still asked
	} {
		t.Run(tt.name, func(t *testing.T) {
			load := switchPlans(t)
			l := startLive(t, load(tt.plans[0]))
			now := time.Now().Truncate(time.Second)
			var used []dpop.Input
			for i, to := range tt.plans[1:] {
				u := dpopInput(t, fmt.Sprintf("%s-used-%d", tt.name, i), now) // jtis of their own: the Redis servers are shared
				checkProof(t, l, u, now, nil)
				used = append(used, u)
				before := l.replayStore
				mustReload(t, l, context.Background(), load(to))
				if l.replayStore == before {
					t.Fatal("the reload kept the replay store")
				}
			}
			for _, u := range used {
				checkProof(t, l, u, now.Add(time.Second), dpop.ErrReplayed)
			}
			fresh := dpopInput(t, tt.name+"-fresh", now)
			checkProof(t, l, fresh, now.Add(time.Second), nil)
			checkProof(t, l, fresh, now.Add(2*time.Second), dpop.ErrReplayed)
		})
	}
}

// TestReloadSwitchedReplayStoreClosed: the Redis client under a replay
// store that a reload replaced is kept while the new checker may ask it
// (here until the test ends the hold), then closed; and at Close.
func TestReloadSwitchedReplayStoreClosed(t *testing.T) {
	redisA, redisB := redistest.Start(t).URL(), redistest.Start(t).URL()
	closed := func(c *redisconn.Client) bool {
		return errors.Is(c.Ping(context.Background()).Err(), redis.ErrClosed)
	}
	t.Run("after-its-window", func(t *testing.T) {
		load := switchPlans(t)
		l := startLive(t, load(redisA))
		end := make(chan time.Time)
		l.holdEnd = func(maxAge time.Duration) <-chan time.Time {
			if maxAge != dpop.DefaultMaxAge {
				t.Errorf("held for max_age %s, want %s", maxAge, dpop.DefaultMaxAge)
			}
			return end
		}
		old := l.replayClient
		now := time.Now().Truncate(time.Second)
		used := dpopInput(t, "window-used", now)
		checkProof(t, l, used, now, nil)
		mustReload(t, l, context.Background(), load(redisB))
		checkProof(t, l, used, now.Add(time.Second), dpop.ErrReplayed)
		if closed(old) {
			t.Fatal("the old store's client is closed within its window")
		}
		close(end)
		l.retired.Wait()
		if !closed(old) {
			t.Error("the old store's client is open after its window")
		}
	})
	t.Run("at-close", func(t *testing.T) {
		load := switchPlans(t)
		l := startLive(t, load(redisA))
		old := l.replayClient
		mustReload(t, l, context.Background(), load(redisB))
		l.Close()
		if !closed(old) {
			t.Error("the old store's client is open after Close")
		}
	})
}

// TestReloadSwitchFromDeadRedis: an old Redis store that cannot answer
// refuses the proofs it may have seen (503 keys_unavailable), never
// accepts them; a proof issued after the window it covers is not asked
// about there.
func TestReloadSwitchFromDeadRedis(t *testing.T) {
	a := redistest.Start(t)
	load := switchPlans(t)
	l := startLive(t, load(a.URL()))
	now := time.Now().Truncate(time.Second)
	used := dpopInput(t, "dead-used", now)
	checkProof(t, l, used, now, nil)
	mustReload(t, l, context.Background(), load(""))
	a.Stop()
	checkProof(t, l, used, now.Add(time.Second), verify.ErrKeysUnavailable)
	checkProof(t, l, dpopInput(t, "dead-fresh", now), now.Add(time.Second), verify.ErrKeysUnavailable) // of the old store's time: it might be there
	// The issuer's leeway (30s) and a minute after the swap: an outage
	// that short, not dpop.RetiredMargin.
	late := time.Now().Add(2 * time.Minute)
	checkProof(t, l, dpopInput(t, "dead-late", late), late, nil)
}
