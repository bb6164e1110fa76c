package introspect_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
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

// TestSharedCacheEntryIsItsTokens: a value in Redis answers only for the
// token whose key it was stored under, and only as the replicas stored it.
// Whoever can write the Redis (another application on the same server, a
// Redis user without the key file) can read the answer of alice's token and
// see the key that a token of their own gets (it appears when they send
// it); moved under that key, or edited, the entry must not make their
// token alice's (or an admin's): the key file is what the replicas trust,
// not whatever the Redis holds.
func TestSharedCacheEntryIsItsTokens(t *testing.T) {
	tests := []struct {
		name string
		// forge returns what the writer puts under mallory's key, from
		// alice's entry.
		forge func(alice []byte) []byte
	}{
		{"copied-from-another-token", func(alice []byte) []byte { return alice }},
		{"claims-edited", func(alice []byte) []byte {
			return bytes.Replace(alice, []byte(`"sub":"alice"`), []byte(`"sub":"admin"`), 1)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			up, url := newServer(t)
			up.set("alice-token", activeAnswer(t0.Add(time.Hour)))
			c := replicas(t, 1, srv, introspect.Options{URL: url, SharedKeyFile: sharedKey(t, 'k', 32), MaxTTL: 10 * time.Minute})[0]
			ctx := context.Background()
			admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer admin.Close()

			if _, err := c.Introspect(ctx, "alice-token", t0); err != nil {
				t.Fatal(err)
			}
			before := sharedEntries(t, admin)
			if _, err := c.Introspect(ctx, "mallory-token", t0); !errors.Is(err, verify.ErrInactive) {
				t.Fatalf("mallory's own token: %v, want inactive", err)
			}
			var aliceKey, malloryKey string
			for k := range sharedEntries(t, admin) {
				if _, ok := before[k]; ok {
					aliceKey = k
				} else {
					malloryKey = k
				}
			}
			if aliceKey == "" || malloryKey == "" {
				t.Fatalf("keys: alice %q, mallory %q", aliceKey, malloryKey)
			}
			if err := admin.Set(ctx, malloryKey, tt.forge(before[aliceKey]), time.Hour).Err(); err != nil {
				t.Fatal(err)
			}

			ans, err := c.Introspect(ctx, "mallory-token", t0.Add(time.Second))
			if !errors.Is(err, verify.ErrInactive) {
				claims := ""
				if ans != nil {
					claims = string(ans.Claims)
				}
				t.Errorf("mallory's token with a value written under its key by someone else: Introspect() = %s, %v; want inactive (the authorization server's answer)", claims, err)
			}
		})
	}
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
