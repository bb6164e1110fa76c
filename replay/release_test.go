package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/replay"
)

// releaser is a store that can give a used key back.
type releaser interface {
	Use(ctx context.Context, key [32]byte, ttl time.Duration, now time.Time) (bool, error)
	Release(ctx context.Context, key [32]byte) error
	Used(ctx context.Context, key [32]byte, now time.Time) (bool, error)
}

// TestRelease: a released key is fresh again, once; other keys stay used.
// Used tells a key in use without using it.
func TestRelease(t *testing.T) {
	stores := map[string]func(t *testing.T) releaser{
		"memory": func(t *testing.T) releaser {
			m, err := replay.NewMemory(0)
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		"redis": func(t *testing.T) releaser {
			srv := redistest.Start(t)
			return newRedis(t, redisconn.Options{URL: srv.URL(), Timeout: 2 * time.Second}, "test:"+t.Name()+":")
		},
	}
	for name, build := range stores {
		t.Run(name, func(t *testing.T) {
			s, ctx := build(t), context.Background()
			if used, err := s.Used(ctx, key(1), t0); used || err != nil {
				t.Fatalf("Used() of a key never used = %t, %v; want false", used, err)
			}
			for _, k := range []byte{1, 2} {
				if ok, err := s.Use(ctx, key(k), time.Minute, t0); !ok || err != nil {
					t.Fatalf("Use(%d) = %t, %v; want fresh", k, ok, err)
				}
			}
			if used, err := s.Used(ctx, key(1), t0); !used || err != nil {
				t.Fatalf("Used() of a used key = %t, %v; want true", used, err)
			}
			if err := s.Release(ctx, key(1)); err != nil {
				t.Fatalf("Release() = %v", err)
			}
			if used, err := s.Used(ctx, key(1), t0); used || err != nil {
				t.Fatalf("Used() of a released key = %t, %v; want false", used, err)
			}
			if ok, err := s.Use(ctx, key(1), time.Minute, t0.Add(time.Second)); !ok || err != nil {
				t.Fatalf("Use() after Release = %t, %v; want fresh", ok, err)
			}
			for _, k := range []byte{1, 2} {
				if ok, err := s.Use(ctx, key(k), time.Minute, t0.Add(2*time.Second)); ok || err != nil {
					t.Fatalf("Use(%d) again = %t, %v; want replayed", k, ok, err)
				}
			}
		})
	}
}

// TestMemoryReleasedKeyUsedAgainOutlivesItsFirstUse: a key released and
// used again is remembered for its second use's ttl: the first use's queue
// entry, expiring earlier, must not purge it (a signal whose store failed
// is given back, then taken by its retry; a replay after the first use's
// expiry is still a replay).
func TestMemoryReleasedKeyUsedAgainOutlivesItsFirstUse(t *testing.T) {
	m, err := replay.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ok, err := m.Use(ctx, key(1), time.Minute, t0); !ok || err != nil {
		t.Fatalf("Use() = %t, %v; want fresh", ok, err)
	}
	if err := m.Release(ctx, key(1)); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.Use(ctx, key(1), time.Minute, t0.Add(30*time.Second)); !ok || err != nil {
		t.Fatalf("Use() after Release = %t, %v; want fresh", ok, err)
	}
	// Past the first use's expiry (t0+1m), within the second's (t0+1m30s).
	if ok, err := m.Use(ctx, key(1), time.Minute, t0.Add(61*time.Second)); ok || err != nil {
		t.Errorf("Use() at t0+61s, the key used again at t0+30s for 1m = %t, %v; want replayed", ok, err)
	}
}
