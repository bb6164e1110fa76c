package introspect_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/introspect"
)

// sharedEntries returns the shared cache's answer keys in srv and their
// values (locks left out).
func sharedEntries(t *testing.T, admin *redis.Client) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	keys, err := admin.Keys(ctx, "jwksverify:introspect:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, k := range keys {
		if strings.HasSuffix(k, ":lock") {
			continue
		}
		v, err := admin.Get(ctx, k).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	return m
}

// TestSharedCacheEntryReadBounded: an entry is at most 64 KiB of claims
// (CONFIG), and that bound holds while the entry is read: a value of
// 32 MiB under a token's key (written by anyone who can write the Redis)
// is not read whole by every replica at every request for that token, and
// is not served.
func TestSharedCacheEntryReadBounded(t *testing.T) {
	srv := redistest.Start(t)
	up, url := newServer(t)
	up.set("tok", activeAnswer(t0.Add(time.Hour)))
	c := replicas(t, 1, srv, introspect.Options{URL: url, SharedKeyFile: sharedKey(t, 'k', 32), MaxTTL: 10 * time.Minute})[0]
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	if _, err := c.Introspect(ctx, "tok", t0); err != nil {
		t.Fatal(err)
	}
	entries := sharedEntries(t, admin)
	if len(entries) != 1 {
		t.Fatalf("entries = %d, want 1", len(entries))
	}
	const huge = 32 << 20
	for k, v := range entries {
		// The entry as stored, its claims object grown by a 32 MiB member.
		i := bytes.LastIndexByte(v, '}')
		big := append(append(bytes.Clone(v[:i]), `,"pad":"`+strings.Repeat("x", huge)+`"`...), v[i:]...)
		if err := admin.Set(ctx, k, big, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ans, err := c.Introspect(ctx, "tok", t0.Add(time.Second))
	runtime.ReadMemStats(&m1)
	if err == nil && len(ans.Claims) > introspect.DefaultMaxAnswerBytes {
		t.Errorf("Introspect() served an entry of %d bytes of claims, over the %d bound", len(ans.Claims), introspect.DefaultMaxAnswerBytes)
	}
	if got := m1.TotalAlloc - m0.TotalAlloc; got > huge/4 {
		t.Errorf("Introspect() allocated %d MiB reading a %d MiB entry; want the read bounded", got>>20, huge>>20)
	}
}
