package introspect_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/verify"
)

// sharedKey writes a shared key file of n bytes of b.
func sharedKey(t *testing.T, b byte, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cache-key")
	if err := os.WriteFile(p, []byte(strings.Repeat(string(rune(b)), n)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// redisClient is a redisconn client of srv, closed by the test.
func redisClient(t *testing.T, srv *redistest.Server) *redisconn.Client {
	t.Helper()
	rc, err := redisconn.New(redisconn.Options{URL: srv.URL(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

// replicas returns n Clients sharing one Redis cache, each with its own
// Redis client, as n replicas would.
func replicas(t *testing.T, n int, srv *redistest.Server, o introspect.Options) []*introspect.Client {
	t.Helper()
	var cs []*introspect.Client
	for range n {
		o := o
		o.SharedCache, o.Redis = true, redisClient(t, srv)
		cs = append(cs, newClient(t, o))
	}
	return cs
}

// TestSharedCacheOneCallPerLifetime: three replicas asking about one token
// at once make one upstream call per cache lifetime, for active and
// inactive answers; no Redis key holds the token or a plain hash of it.
func TestSharedCacheOneCallPerLifetime(t *testing.T) {
	srv := redistest.Start(t)
	up, url := newServer(t)
	tok := "ory_at_" + strings.Repeat("s3cr3t", 8)
	up.set(tok, activeAnswer(t0.Add(time.Hour)))
	cs := replicas(t, 3, srv, introspect.Options{URL: url, SharedKeyFile: sharedKey(t, 'k', 32), MaxTTL: time.Minute, NegativeTTL: 10 * time.Second})
	ask := func(token string, at time.Time, wantErr error) {
		t.Helper()
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() {
				ans, err := cs[i%3].Introspect(context.Background(), token, at)
				if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
					t.Errorf("replica %d: Introspect() = %v, want %v", i%3, err, wantErr)
				}
				if err == nil && !strings.Contains(string(ans.Claims), `"sub":"alice"`) {
					t.Errorf("replica %d: Claims = %s", i%3, ans.Claims)
				}
			})
		}
		wg.Wait()
	}
	tests := []struct {
		name      string
		token     string
		at        time.Duration
		wantErr   error
		wantCalls int64
	}{
		{"active-first", tok, 0, nil, 1},
		{"active-cached", tok, 59 * time.Second, nil, 1},
		{"active-next-lifetime", tok, 61 * time.Second, nil, 2},
		{"inactive-first", "unknown-token-1", 0, verify.ErrInactive, 3},
		{"inactive-cached", "unknown-token-1", 9 * time.Second, verify.ErrInactive, 3},
		{"inactive-next-lifetime", "unknown-token-1", 11 * time.Second, verify.ErrInactive, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ask(tt.token, t0.Add(tt.at), tt.wantErr)
			if got := up.calls.Load(); got != tt.wantCalls {
				t.Errorf("upstream calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}

	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	keys, err := admin.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Errorf("Redis keys = %q, want the two answers", keys)
	}
	for _, token := range []string{tok, "unknown-token-1"} {
		sum := sha256.Sum256([]byte(token))
		forbidden := []string{token, hex.EncodeToString(sum[:]), hex.EncodeToString(sum[:16]),
			base64.RawURLEncoding.EncodeToString(sum[:]), base64.StdEncoding.EncodeToString(sum[:])}
		for _, k := range keys {
			v, _ := admin.Get(context.Background(), k).Result()
			for _, f := range forbidden {
				if strings.Contains(k, f) || strings.Contains(v, f) {
					t.Errorf("Redis key %q (or its value) holds the token or a plain hash of it", k)
				}
			}
			if !strings.HasPrefix(k, "jwksverify:introspect:{") {
				t.Errorf("Redis key %q, want a hash-tagged jwksverify:introspect:{MAC}", k)
			}
		}
	}
}

// TestSharedCacheKeyedByTheSharedKey: replicas with another key (or another
// issuer) do not read each other's answers.
func TestSharedCacheKeyedByTheSharedKey(t *testing.T) {
	srv := redistest.Start(t)
	up, url := newServer(t)
	up.set("tok", activeAnswer(t0.Add(time.Hour)))
	a := replicas(t, 1, srv, introspect.Options{URL: url, SharedKeyFile: sharedKey(t, 'a', 32)})[0]
	b := replicas(t, 1, srv, introspect.Options{URL: url, SharedKeyFile: sharedKey(t, 'b', 32)})[0]
	c := replicas(t, 1, srv, introspect.Options{URL: url, SharedKeyFile: sharedKey(t, 'a', 32), Issuer: "https://other.example.com/"})[0]
	for i, cl := range []*introspect.Client{a, b, c} {
		if _, err := cl.Introspect(context.Background(), "tok", t0); err != nil {
			t.Fatal(err)
		}
		if got := up.calls.Load(); got != int64(i+1) {
			t.Errorf("after client %d: upstream calls = %d, want %d", i, got, i+1)
		}
	}
}

// TestSharedCacheFailsClosed: Redis unreachable answers keys_unavailable
// (never an allow, never a stale answer); a replica that died holding a
// token's lock delays the others until the lock expires, then one calls.
func TestSharedCacheFailsClosed(t *testing.T) {
	srv := redistest.Start(t)
	up, url := newServer(t)
	up.set("tok", activeAnswer(t0.Add(time.Hour)))
	c := replicas(t, 1, srv, introspect.Options{URL: url, SharedKeyFile: sharedKey(t, 'k', 32), MaxTTL: time.Minute, StaleFor: time.Hour})[0]
	if _, err := c.Introspect(context.Background(), "tok", t0); err != nil {
		t.Fatal(err)
	}

	t.Run("stale-while-upstream-fails", func(t *testing.T) {
		up.setFail(true)
		defer up.setFail(false)
		if _, err := c.Introspect(context.Background(), "tok", t0.Add(2*time.Minute)); err != nil {
			t.Errorf("Introspect() past fresh, within stale, upstream down = %v, want the stale answer", err)
		}
		if _, err := c.Introspect(context.Background(), "never-seen", t0.Add(2*time.Minute)); !errors.Is(err, verify.ErrKeysUnavailable) {
			t.Errorf("Introspect() of a new token, upstream down = %v, want %v", err, verify.ErrKeysUnavailable)
		}
	})

	t.Run("lock-of-a-dead-replica", func(t *testing.T) {
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		defer admin.Close()
		keys, _ := admin.Keys(context.Background(), "jwksverify:introspect:*").Result()
		if len(keys) != 1 {
			t.Fatalf("keys = %q", keys)
		}
		// The answer gone, its lock held by a replica that will never
		// answer, for 300ms.
		admin.Del(context.Background(), keys[0])
		admin.Set(context.Background(), keys[0]+":lock", "dead-replica", 300*time.Millisecond)
		before := up.calls.Load()
		start := time.Now()
		if _, err := c.Introspect(context.Background(), "tok", t0); err != nil {
			t.Fatalf("Introspect() after the dead replica's lock expired = %v", err)
		}
		if took := time.Since(start); took < 250*time.Millisecond {
			t.Errorf("Introspect() took %v, want it to wait for the lock (300ms)", took)
		}
		if got := up.calls.Load() - before; got != 1 {
			t.Errorf("upstream calls = %d, want 1", got)
		}
		if st := c.Stats(); st.SharedWaits == 0 {
			t.Errorf("Stats() = %+v, want a shared wait counted", st)
		}
	})

	t.Run("redis-down", func(t *testing.T) {
		srv.Stop()
		before := up.calls.Load()
		for _, at := range []time.Duration{0, 2 * time.Minute} {
			ans, err := c.Introspect(context.Background(), "tok", t0.Add(at))
			if ans != nil || !errors.Is(err, verify.ErrKeysUnavailable) || !errors.Is(err, introspect.ErrShared) {
				t.Errorf("Introspect() at +%v with Redis down = %v, %v; want %v and %v", at, ans, err, verify.ErrKeysUnavailable, introspect.ErrShared)
			}
		}
		if got := up.calls.Load(); got != before {
			t.Errorf("upstream called %d times with Redis down, want 0", got-before)
		}
		if st := c.Stats(); st.SharedErrors == 0 {
			t.Errorf("Stats() = %+v, want shared errors counted", st)
		}
	})
}

func TestSharedCacheOptions(t *testing.T) {
	srv := redistest.Start(t)
	rc := redisClient(t, srv)
	tests := []struct {
		name  string
		o     introspect.Options
		field string
	}{
		{"no-key-file", introspect.Options{SharedCache: true, Redis: rc}, "SharedKeyFile"},
		{"key-without-shared", introspect.Options{SharedKeyFile: sharedKey(t, 'k', 32)}, "SharedKeyFile"},
		{"short-key", introspect.Options{SharedCache: true, Redis: rc, SharedKeyFile: sharedKey(t, 'k', introspect.MinSharedKeyBytes-1)}, "SharedKeyFile"},
		{"no-redis", introspect.Options{SharedCache: true, SharedKeyFile: sharedKey(t, 'k', 32)}, "Redis"},
		{"max-entries", introspect.Options{SharedCache: true, Redis: rc, SharedKeyFile: sharedKey(t, 'k', 32), MaxEntries: 5}, "MaxEntries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Issuer, tt.o.URL = "https://as.example.com/", "https://as.example.com/introspect"
			_, err := introspect.New(tt.o)
			var oe *introspect.OptionError
			if !errors.As(err, &oe) || oe.Field != tt.field {
				t.Errorf("New() = %v, want an OptionError of %s", err, tt.field)
			}
		})
	}
}
