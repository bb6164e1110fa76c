package redisconn_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/replay"
)

// BenchmarkRedisPaths measures, against one redis-server on loopback
// started by the benchmark and in the same run: a bare go-redis GET (the
// floor), a hit of the shared introspection cache (one GET, the MAC of the
// token and the decoding of the stored answer), and the DPoP replay check
// of one fresh proof (one set-if-absent script; with acknowledge_replicas, a WAIT on
// the same connection too, not measured here: it needs a replica). Compare
// each with bare-get: the difference is jwksverify's own cost. It skips
// when redis-server is not installed.
func BenchmarkRedisPaths(b *testing.B) {
	srv := redistest.Start(b)
	rc, err := redisconn.New(redisconn.Options{URL: srv.URL(), Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	ctx := context.Background()
	if err := rc.Set(ctx, "bench:bare", strings.Repeat("v", 160), 0).Err(); err != nil {
		b.Fatal(err)
	}

	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, fmt.Sprintf(`{"active":true,"sub":"alice","scope":"read write","client_id":"c1","exp":%d,"iss":"https://as.example.com/"}`, time.Now().Add(time.Hour).Unix()))
	}))
	defer as.Close()
	key := filepath.Join(b.TempDir(), "cache-key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		b.Fatal(err)
	}
	ic, err := introspect.New(introspect.Options{Issuer: "https://as.example.com/", URL: as.URL, SharedCache: true, SharedKeyFile: key, Redis: rc})
	if err != nil {
		b.Fatal(err)
	}
	defer ic.Close()
	tok := "ory_at_" + strings.Repeat("x", 43) + "." + strings.Repeat("y", 43)
	now := time.Now()
	if _, err := ic.Introspect(ctx, tok, now); err != nil {
		b.Fatal(err)
	}
	st, err := replay.NewRedis(rc, replay.RedisOptions{KeyPrefix: "bench:dpop:"})
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Uint64

	b.Run("bare-get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := rc.Get(ctx, "bench:bare").Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("introspect-shared-hit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ic.Introspect(ctx, tok, now); err != nil {
				b.Fatal(err)
			}
		}
		if s := ic.Stats(); s.Active != 1 {
			b.Fatalf("%d upstream calls, want 1: not the hit path", s.Active)
		}
	})
	b.Run("replay-use", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i := n.Add(1)
			k := [32]byte{byte(i), byte(i >> 8), byte(i >> 16), byte(i >> 24), byte(i >> 32)}
			if ok, err := st.Use(ctx, k, time.Minute, now); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}
