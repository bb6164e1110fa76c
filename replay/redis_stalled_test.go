package replay_test

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
)

// A stalled Redis (the process stopped: connections are accepted by the
// kernel, nothing answers) fails every Use closed within Timeout, counted
// from the call, however the calls queue for the pool: a call that waits
// for a pooled connection and then for an answer must not take the sum of
// the two (the HTTP server's timeouts count Timeout once per request). Once
// Redis runs again the store answers again.
func TestRedisStalledBoundedByTimeout(t *testing.T) {
	const timeout = time.Second
	// The bound checked: Timeout, plus slack for a loaded machine, well
	// below what a second phase of Timeout adds (a caller that queued for
	// the pooled connection 100ms after the first then waits ~1.9s).
	const slack = 500 * time.Millisecond
	tests := []struct {
		name    string
		pool    int
		callers int
		stagger time.Duration // between the callers' starts
	}{
		{name: "pool-of-one-staggered", pool: 1, callers: 4, stagger: timeout / 10},
		{name: "pool-of-two-burst", pool: 2, callers: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			st := newRedis(t, redisconn.Options{URL: srv.URL(), Timeout: timeout, PoolSize: tt.pool}, "")
			ctx := context.Background()
			if ok, err := st.Use(ctx, key(1), time.Minute, t0); !ok || err != nil {
				t.Fatalf("Use() = %t, %v; want fresh", ok, err)
			}
			if err := srv.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			start := time.Now()
			for i := range tt.callers {
				at := start.Add(time.Duration(i) * tt.stagger)
				wg.Go(func() {
					time.Sleep(time.Until(at)) // the arrival schedule, not a synchronization
					began := time.Now()
					ok, err := st.Use(ctx, key(byte(10+i)), time.Minute, t0)
					took := time.Since(began)
					if ok || err == nil {
						t.Errorf("caller %d: Use() with Redis stalled = %t, %v; want an error", i, ok, err)
					}
					if took > timeout+slack {
						t.Errorf("caller %d: Use() took %v with Redis stalled, want at most Timeout %v (+%v)", i, took.Round(time.Millisecond), timeout, slack)
					}
				})
			}
			wg.Wait()
			if err := srv.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			useWhenBack(t, st, key(200), "after SIGCONT")
		})
	}
}
