package replay_test

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/replay"
)

// newRedis returns a store over a new client of url, closed by the test.
func newRedis(t testing.TB, o redisconn.Options, prefix string) *replay.Redis {
	t.Helper()
	c, err := redisconn.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	st, err := replay.NewRedis(c, replay.RedisOptions{KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRedis(t *testing.T) {
	srv := redistest.Start(t)
	st := newRedis(t, redisconn.Options{URL: srv.URL(), Timeout: 2 * time.Second}, "test:"+t.Name()+":")
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
	other := newRedis(t, redisconn.Options{URL: srv.URL(), PoolSize: 4, Timeout: 2 * time.Second}, "test:"+t.Name()+":")
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
	srv.Stop()
	if ok, err := st.Use(ctx, key(3), time.Minute, t0); ok || err == nil {
		t.Errorf("Use() with redis stopped = %t, %v; want an error", ok, err)
	}
	srv.Start()
	useWhenBack(t, st, key(4), "after restart")
	if s := st.Stats(); s.Errors == 0 || s.Fresh < 2 {
		t.Errorf("Stats() = %+v", s)
	}
}

// useWhenBack uses new keys (k, then k with a counter in its last bytes)
// until the store answers again (at most 10s), and checks that the key it
// answered for is fresh. Each try has a key of its own: a try that timed
// out may still have set its key (the server ran it, the answer came
// late), and the same key again would be a replay.
func useWhenBack(t *testing.T, st *replay.Redis, k [32]byte, when string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for try := uint16(0); ; try++ {
		k[30], k[31] = byte(try>>8), byte(try)
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
	srv := redistest.Start(t)
	st := newRedis(t, redisconn.Options{URL: srv.URL()}, "")
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

func TestNewRedisRefusesNoClient(t *testing.T) {
	if _, err := replay.NewRedis(nil, replay.RedisOptions{}); !errors.Is(err, replay.ErrInvalidOptions) {
		t.Errorf("NewRedis(nil) = %v, want %v", err, replay.ErrInvalidOptions)
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

// BenchmarkRedisUse is one set-if-absent round trip (the use script) to a
// redis-server on loopback, sequential and with 16 callers in parallel.
func BenchmarkRedisUse(b *testing.B) {
	srv := redistest.Start(b)
	st := newRedis(b, redisconn.Options{URL: srv.URL()}, "")
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

// TestRedisAcknowledgeReplicas: with acknowledge_replicas and no replica to
// acknowledge, a fresh proof is an error (its key may be on the master only:
// never "fresh"), and its second use is refused as replayed.
func TestRedisAcknowledgeReplicas(t *testing.T) {
	srv := redistest.Start(t)
	// WAIT gives up after half the Timeout, and the call has the other
	// half for the rest (the dial, the script, the answers): with 1s that
	// was 500ms, and a loaded 2-core machine missed it ("eval: i/o
	// timeout"). 4s leaves 2s.
	const timeout = 4 * time.Second
	st := newRedis(t, redisconn.Options{URL: srv.URL(), AcknowledgeReplicas: 1, Timeout: timeout}, "")
	ctx := context.Background()
	if ok, err := st.Use(ctx, key(1), time.Minute, t0); ok || !errors.Is(err, redisconn.ErrNotReplicated) {
		t.Errorf("Use() without a replica = %t, %v; want %v", ok, err, redisconn.ErrNotReplicated)
	}
	if ok, err := st.Use(ctx, key(1), time.Minute, t0); ok || err != nil {
		t.Errorf("second Use() = %t, %v; want replayed", ok, err)
	}
}

// TestRedisOwnValue: the same use sent again (its value) is fresh and
// keeps the key; another use (another value) is a replay, and so is a key
// an older version set to "1".
func TestRedisOwnValue(t *testing.T) {
	srv := redistest.Start(t)
	prefix := "test:" + t.Name() + ":"
	st := newRedis(t, redisconn.Options{URL: srv.URL(), Timeout: 2 * time.Second}, prefix)
	ctx := context.Background()
	for i, tt := range []struct {
		value string
		fresh bool
	}{
		{"use-a", true},  // absent: set
		{"use-a", true},  // its own value: the same use, sent again
		{"use-b", false}, // another use's value: a replay
		{"use-a", true},
	} {
		if ok, err := st.UseAs(ctx, key(1), time.Minute, tt.value); ok != tt.fresh || err != nil {
			t.Errorf("#%d UseAs(%q) = %t, %v; want %t", i, tt.value, ok, err, tt.fresh)
		}
	}
	if ok, err := st.Use(ctx, key(1), time.Minute, t0); ok || err != nil {
		t.Errorf("Use() of a key another use holds = %t, %v; want replayed", ok, err)
	}

	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer admin.Close()
	k := key(2)
	if err := admin.Set(ctx, prefix+hex.EncodeToString(k[:]), "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Use(ctx, k, time.Minute, t0); ok || err != nil {
		t.Errorf("Use() of a key set to 1 (an older version's use) = %t, %v; want replayed", ok, err)
	}
	// A key of another type is an error, never fresh.
	k = key(3)
	if err := admin.HSet(ctx, prefix+hex.EncodeToString(k[:]), "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Use(ctx, k, time.Minute, t0); ok || err == nil {
		t.Errorf("Use() of a key holding a hash = %t, %v; want an error", ok, err)
	}
}
