package introspect_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// TestIntrospectRetryAfterBoundedByMaxTTL: a Retry-After longer than
// max_ttl pauses the calls for max_ttl only: an authorization server
// (or whoever answers in its name) asking for a day's pause must not turn
// every opaque token without a held answer into keys_unavailable for a
// day.
func TestIntrospectRetryAfterBoundedByMaxTTL(t *testing.T) {
	var shed atomic.Bool
	shed.Store(true)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if shed.Load() {
			w.Header().Set("Retry-After", "86400")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, activeAnswer(t0.Add(time.Hour)))
	}))
	defer ts.Close()
	c := newClient(t, introspect.Options{URL: ts.URL, MaxTTL: time.Minute})
	ctx := context.Background()
	if _, err := c.Introspect(ctx, "a", t0); !errors.Is(err, verify.ErrKeysUnavailable) {
		t.Fatalf("Introspect() while shedding = %v, want keys_unavailable", err)
	}
	shed.Store(false)
	if _, err := c.Introspect(ctx, "b", t0.Add(30*time.Second)); !errors.Is(err, verify.ErrKeysUnavailable) {
		t.Errorf("Introspect() within max_ttl of the Retry-After = %v, want keys_unavailable (paused)", err)
	}
	if _, err := c.Introspect(ctx, "c", t0.Add(61*time.Second)); err != nil {
		t.Errorf("Introspect() past max_ttl (1m) of a Retry-After of a day = %v, want the server asked again", err)
	}
}

// TestIntrospectStaleNeverPastExp: an active answer is served stale while
// its endpoint fails, but never past the exp it carries (stale_for counts
// from max_ttl, the exp may come sooner).
func TestIntrospectStaleNeverPastExp(t *testing.T) {
	var failing atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, activeAnswer(t0.Add(5*time.Second)))
	}))
	defer ts.Close()
	c := newClient(t, introspect.Options{URL: ts.URL, MaxTTL: 10 * time.Second, StaleFor: time.Minute})
	ctx := context.Background()
	if _, err := c.Introspect(ctx, "tok", t0); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	if ans, err := c.Introspect(ctx, "tok", t0.Add(6*time.Second)); !errors.Is(err, verify.ErrKeysUnavailable) {
		t.Errorf("a second past the answer's exp, the endpoint down: Introspect() = %v, %v; want keys_unavailable", ans, err)
	}
}
