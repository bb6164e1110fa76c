package introspect_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// TestSharedCacheFloodKeepsNoRevokedTokenAlive: a call that finds no free
// max_concurrent slot is never answered stale while the server answers (a
// flood of random tokens must not keep a revoked token alive), and with
// the shared cache that holds across replicas. Whoever holds a revoked
// token whose answer is past its max_ttl (within stale_for) floods replica
// A's slots and sends the token to A without pause: each of A's flights
// takes the token's Redis lock, waits max_wait for a slot, releases the
// lock and is answered keys_unavailable, and A's next flight takes the
// lock again at once. Replica B, whose slots are free, polls for the lock
// every 100ms and finds it held until its flight's budget is spent; its
// answer must not be the stale active one (the server, which B never got
// to ask, says the token is revoked).
func TestSharedCacheFloodKeepsNoRevokedTokenAlive(t *testing.T) {
	srv := redistest.Start(t)
	var revoked atomic.Bool
	var blocked sync.Once
	blocking := make(chan struct{})
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		answer := `{"active":true,"sub":"alice"}`
		switch {
		case strings.Contains(string(body), "flood"):
			blocked.Do(func() { close(blocking) })
			<-r.Context().Done() // the flood holds A's one slot
			return nil, r.Context().Err()
		case revoked.Load():
			answer = `{"active":false}`
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(answer)), Request: r}, nil
	})}
	key := sharedKey(t, 'k', 32)
	o := introspect.Options{URL: "https://as.example.com/introspect", HTTPClient: hc, SharedKeyFile: key,
		MaxTTL: time.Minute, StaleFor: time.Hour, MaxWait: 200 * time.Millisecond}
	oa, ob := o, o
	oa.MaxConcurrent, oa.Timeout = 1, time.Minute // A: its one slot held by the flood
	ob.Timeout = 500 * time.Millisecond           // B: a shorter flight, for the test's time
	a := replicas(t, 1, srv, oa)[0]
	b := replicas(t, 1, srv, ob)[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	if _, err := b.Introspect(ctx, "revoked-token", t0); err != nil {
		t.Fatal(err)
	}
	revoked.Store(true)
	later := t0.Add(2 * time.Minute) // past max_ttl, within stale_for

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _, _ = a.Introspect(ctx, "flood", later) })
	<-blocking
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _ = a.Introspect(ctx, "revoked-token", later)
			}
		})
	}
	for a.Stats().Overloaded == 0 {
		time.Sleep(10 * time.Millisecond)
	}

	ans, err := b.Introspect(context.Background(), "revoked-token", later)
	if err == nil {
		t.Errorf("replica B, replica A flooded: Introspect(revoked) = %s, nil; want inactive or keys_unavailable, not the stale answer", ans.Claims)
	} else if !errors.Is(err, verify.ErrInactive) && !errors.Is(err, verify.ErrKeysUnavailable) {
		t.Errorf("Introspect(revoked) = %v", err)
	}
}
