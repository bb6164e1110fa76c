package replay_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/replay"
)

// redisServer is a real redis-server on 127.0.0.1, stopped by the test.
type redisServer struct {
	t    testing.TB
	port int
	cmd  *exec.Cmd
}

// startRedis starts redis-server, failing under CI=true when it is not
// installed (.ci/run installs it), skipping elsewhere.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed (CI installs it: .ci/run)")
		}
		t.Skip("redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &redisServer{t: t, port: port}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *redisServer) url() string { return "redis://127.0.0.1:" + strconv.Itoa(r.port) }

func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	// Wait until it accepts connections (bounded: 10s).
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(r.port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server did not listen within 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a port, not synchronizing goroutines
	}
}

func (r *redisServer) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

func TestRedis(t *testing.T) {
	srv := startRedis(t)
	st, err := replay.NewRedis(replay.RedisOptions{URL: srv.url(), KeyPrefix: "test:" + t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Use(ctx, key(1), time.Minute, t0); !ok || err != nil {
		t.Fatalf("first Use() = %t, %v; want fresh", ok, err)
	}
	if ok, err := st.Use(ctx, key(1), time.Minute, t0); ok || err != nil {
		t.Fatalf("second Use() = %t, %v; want replayed", ok, err)
	}

	// Concurrent uses of one key from two stores: exactly one fresh.
	other, err := replay.NewRedis(replay.RedisOptions{URL: srv.url(), KeyPrefix: "test:" + t.Name() + ":", PoolSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var fresh atomic.Int32
	var wg sync.WaitGroup
	for i := range 200 {
		s := st
		if i%2 == 1 {
			s = other
		}
		wg.Go(func() {
			ok, err := s.Use(ctx, key(2), time.Minute, t0)
			if err != nil {
				t.Error(err)
			}
			if ok {
				fresh.Add(1)
			}
		})
	}
	wg.Wait()
	if n := fresh.Load(); n != 1 {
		t.Errorf("%d fresh answers of 200 concurrent uses, want 1", n)
	}

	// A stopped server is an error, never fresh; a restarted one is used
	// again by the same store.
	srv.stop()
	if ok, err := st.Use(ctx, key(3), time.Minute, t0); ok || err == nil {
		t.Errorf("Use() with redis stopped = %t, %v; want an error", ok, err)
	}
	srv.start()
	useWhenBack(t, st, key(4), "after restart")
	if s := st.Stats(); s.Errors == 0 || s.Fresh < 2 {
		t.Errorf("Stats() = %+v", s)
	}
}

// useWhenBack uses k until the store answers again (at most 10s), and
// checks that the new key is fresh.
func useWhenBack(t *testing.T, st *replay.Redis, k [32]byte, when string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := st.Use(context.Background(), k, time.Minute, t0)
		if err == nil {
			if !ok {
				t.Errorf("%s: Use() of a new key = replayed", when)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: Use() = %v for 10s", when, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a recovering server
	}
}

// TestRedisTTL checks that the key expires after the ttl (PX).
func TestRedisTTL(t *testing.T) {
	srv := startRedis(t)
	st, err := replay.NewRedis(replay.RedisOptions{URL: srv.url()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if ok, err := st.Use(ctx, key(9), 50*time.Millisecond, t0); !ok || err != nil {
		t.Fatalf("Use() = %t, %v", ok, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := st.Use(ctx, key(9), 50*time.Millisecond, t0)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the key did not expire within 5s of a 50ms ttl")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNewRedisRefuses(t *testing.T) {
	const u = "redis://127.0.0.1:1"
	for _, tt := range []struct {
		o     replay.RedisOptions
		field string // "": accepted
	}{
		{replay.RedisOptions{URL: u, Timeout: replay.MinRedisTimeout, PoolSize: replay.MaxRedisPoolSize}, ""},
		{replay.RedisOptions{URL: u, Timeout: replay.MaxRedisTimeout, PoolSize: 1}, ""},
		{replay.RedisOptions{}, "URL: "},
		{replay.RedisOptions{URL: u, Timeout: -1}, "Timeout: "},
		{replay.RedisOptions{URL: u, Timeout: replay.MinRedisTimeout - 1}, "Timeout: "},
		{replay.RedisOptions{URL: u, Timeout: replay.MaxRedisTimeout + 1}, "Timeout: "},
		{replay.RedisOptions{URL: u, PoolSize: -1}, "PoolSize: "},
		{replay.RedisOptions{URL: u, PoolSize: replay.MaxRedisPoolSize + 1}, "PoolSize: "},
	} {
		err := replay.CheckRedisOptions(tt.o)
		if tt.field == "" {
			r, err := replay.NewRedis(tt.o)
			if err != nil {
				t.Errorf("NewRedis(%+v) = %v", tt.o, err)
				continue
			}
			r.Close()
			continue
		}
		if !errors.Is(err, replay.ErrInvalidOptions) || !strings.HasPrefix(strings.TrimPrefix(err.Error(), replay.ErrInvalidOptions.Error()+": "), tt.field) {
			t.Errorf("CheckRedisOptions(%+v) = %v, want %v naming %q first", tt.o, err, replay.ErrInvalidOptions, tt.field)
		}
		if _, err := replay.NewRedis(tt.o); !errors.Is(err, replay.ErrInvalidOptions) {
			t.Errorf("NewRedis(%+v) = %v, want %v", tt.o, err, replay.ErrInvalidOptions)
		}
	}
}

func TestNewMemoryBounds(t *testing.T) {
	for _, n := range []int{0, 1, replay.MaxMaxEntries} {
		if err := replay.CheckMaxEntries(n); err != nil {
			t.Errorf("CheckMaxEntries(%d) = %v", n, err)
		}
	}
	for _, n := range []int{-1, replay.MaxMaxEntries + 1} {
		if err := replay.CheckMaxEntries(n); !errors.Is(err, replay.ErrInvalidOptions) || !strings.Contains(err.Error(), "MaxEntries: ") {
			t.Errorf("CheckMaxEntries(%d) = %v, want %v naming MaxEntries", n, err, replay.ErrInvalidOptions)
		}
		if _, err := replay.NewMemory(n); !errors.Is(err, replay.ErrInvalidOptions) {
			t.Errorf("NewMemory(%d) = %v, want %v", n, err, replay.ErrInvalidOptions)
		}
	}
}

// BenchmarkRedisUse is one SET NX PX round trip to a redis-server on
// loopback, sequential and with 16 callers in parallel.
func BenchmarkRedisUse(b *testing.B) {
	srv := startRedis(b)
	st, err := replay.NewRedis(replay.RedisOptions{URL: srv.url()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var n atomic.Uint64
	use := func(b *testing.B) {
		i := n.Add(1)
		k := [32]byte{byte(i), byte(i >> 8), byte(i >> 16), byte(i >> 24), byte(i >> 32)}
		if ok, err := st.Use(context.Background(), k, time.Minute, t0); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			use(b)
		}
	})
	b.Run("parallel-16", func(b *testing.B) {
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				use(b)
			}
		})
	})
}
