package replay_test

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
	const timeout = 2 * time.Second
	// The bound checked: Timeout, plus slack for a loaded machine, below
	// what a second phase of Timeout adds (a caller that queued for the
	// pooled connection 200ms after the first then waits ~3.8s; the last
	// of the staggered ones ~3.4s). With 1s and 500ms a busy 2-core
	// machine stalled the whole test process past the bound: every caller
	// returned at the same moment, 1.94s after the first started.
	const slack = time.Second
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
			// The pool's connection and the eviction reading, before the
			// stall: polled, since the first call (a dial, INFO, the
			// script) may outlast Timeout on a loaded machine.
			useWhenBack(t, st, key(1), "before SIGSTOP")
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

// A Use whose eviction check reads Redis (no reading within the second)
// and waits for a slow answer, then writes to a Redis that does not
// answer, fails within Timeout counted from the call: the check and the
// write share one deadline, as the HTTP server's timeouts assume. Redis
// sleeps (DEBUG SLEEP) through most of the check, and a CLIENT PAUSE WRITE
// holds the script, not INFO.
func TestRedisUseOneDeadlineForCheckAndWrite(t *testing.T) {
	const (
		timeout = 2 * time.Second
		asleep  = 1700 * time.Millisecond // most of timeout: the check's INFO waits for it
		// The bound checked: Timeout, plus slack for a loaded machine,
		// below the ~3.6s of a check and a write with a Timeout each.
		slack = time.Second
	)
	srv := redistest.Start(t, "--enable-debug-command", "yes")
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { admin.Close() })
	ctx := context.Background()
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	sleeper := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: -1})
	t.Cleanup(func() { sleeper.Close() })
	if err := sleeper.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Redis asleep: a PING goes unanswered (polled, at most 10s).
	probe := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { probe.Close() })
	if err := probe.Ping(ctx).Err(); err != nil { // its connection, before the sleep
		t.Fatal(err)
	}
	slept := make(chan error, 1)
	go func() { slept <- sleeper.Do(ctx, "DEBUG", "SLEEP", asleep.Seconds()).Err() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		pctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		err := probe.Ping(pctx).Err()
		cancel()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Redis answered PING for 10s after DEBUG SLEEP")
		}
	}

	st := newRedis(t, redisconn.Options{URL: srv.URL(), Timeout: timeout}, "")
	start := time.Now()
	ok, err := st.Use(ctx, key(1), time.Minute, t0)
	took := time.Since(start)
	if ok || err == nil {
		t.Errorf("Use() with the script held = %t, %v; want an error", ok, err)
	}
	if took > timeout+slack {
		t.Errorf("Use() took %v (a slow eviction check, then a write held), want at most Timeout %v (+%v): %v", took.Round(time.Millisecond), timeout, slack, err)
	}
	if err := <-slept; err != nil {
		t.Errorf("DEBUG SLEEP = %v", err)
	}
}
