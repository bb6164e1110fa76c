package introspect_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// TestIntrospectRetryAfterHonoured: an authorization server that answers
// 429 (or 503) with Retry-After asked for a pause; jwksverify's JWKS
// fetcher honours it (DECISIONS "Retry-After is honoured"), the
// introspection client asked again at every request, whatever the token:
// one upstream call per request while the server is shedding load.
// During the pause, requests are answered as for an unreachable server
// (a stale answer within stale_for, else keys_unavailable) without a call.
func TestIntrospectRetryAfterHonoured(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var calls atomic.Int64
			var shed atomic.Bool
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if shed.Load() {
					w.Header().Set("Retry-After", "60")
					http.Error(w, "slow down", status)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, activeAnswer(t0.Add(time.Hour)))
			}))
			defer ts.Close()
			c := newClient(t, introspect.Options{URL: ts.URL, MaxTTL: time.Minute, StaleFor: time.Minute})
			ctx := context.Background()
			if _, err := c.Introspect(ctx, "cached", t0); err != nil {
				t.Fatal(err)
			}
			shed.Store(true)
			at := t0.Add(61 * time.Second) // "cached" is stale now
			if _, err := c.Introspect(ctx, "new-0", at); !errors.Is(err, verify.ErrKeysUnavailable) {
				t.Fatalf("Introspect() = %v, want keys_unavailable", err)
			}
			before := calls.Load() // 2: the first answer, the 429
			for i := 1; i <= 10; i++ {
				now := at.Add(time.Duration(i) * time.Second) // within the 60s asked for
				if _, err := c.Introspect(ctx, fmt.Sprintf("new-%d", i), now); !errors.Is(err, verify.ErrKeysUnavailable) {
					t.Fatalf("Introspect(new-%d) = %v, want keys_unavailable", i, err)
				}
				if _, err := c.Introspect(ctx, "cached", now); err != nil {
					t.Fatalf("Introspect(cached) = %v, want the stale answer", err)
				}
			}
			if got := calls.Load() - before; got != 0 {
				t.Errorf("%d upstream calls within the Retry-After pause of 60s; want none", got)
			}
		})
	}
}
