package introspect_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// TestFailingEndpointIsNotAskedPerRequest: once a token's call has failed,
// its stale answer serves without asking the failing endpoint again for a
// second, then two, four… (at most MaxTTL): an authorization server
// answering 500 was asked once per request for every token past its
// max_ttl, the whole request rate at a server that is down. A token
// without an answer at hand still asks, and a recovered server's answer
// replaces the held one at the next call.
func TestFailingEndpointIsNotAskedPerRequest(t *testing.T) {
	var calls atomic.Int64
	var failing atomic.Bool
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		if failing.Load() {
			return &http.Response{StatusCode: http.StatusInternalServerError, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"active":true,"sub":"alice"}`)), Request: r}, nil
	})}
	c := newClient(t, introspect.Options{URL: "https://as.example.com/introspect", HTTPClient: hc,
		MaxTTL: 10 * time.Second, StaleFor: time.Hour})
	ctx := context.Background()
	t0 := time.Unix(1_000_000, 0)
	if _, err := c.Introspect(ctx, "tok", t0); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	// At each instant, 50 requests for the token past its max_ttl: how many
	// calls reach the endpoint.
	steps := []struct {
		at    time.Duration
		calls int64
	}{
		{11 * time.Second, 1},         // fails: hold 1s
		{11500 * time.Millisecond, 0}, // held
		{12 * time.Second, 1},         // fails again: hold 2s
		{13 * time.Second, 0},
		{14 * time.Second, 1}, // hold 4s
		{17 * time.Second, 0},
		{18 * time.Second, 1}, // hold 8s
		{26 * time.Second, 1}, // hold 16s, cut to MaxTTL: 10s
		{35 * time.Second, 0}, // held
		{36 * time.Second, 1}, // asks again
		{36500 * time.Millisecond, 0},
	}
	for _, st := range steps {
		before := calls.Load()
		for range 50 {
			ans, err := c.Introspect(ctx, "tok", t0.Add(st.at))
			if err != nil || ans == nil || !strings.Contains(string(ans.Claims), `"alice"`) {
				t.Fatalf("at +%s: Introspect() = %v, %v; want the stale answer", st.at, ans, err)
			}
		}
		if got := calls.Load() - before; got != st.calls {
			t.Errorf("at +%s: %d calls reached the failing endpoint for 50 requests, want %d", st.at, got, st.calls)
		}
	}
	// A token without an answer at hand asks (and fails closed).
	before := calls.Load()
	if _, err := c.Introspect(ctx, "other", t0.Add(37*time.Second)); !errors.Is(err, verify.ErrKeysUnavailable) {
		t.Errorf("Introspect(other) = %v, want keys_unavailable", err)
	}
	if calls.Load()-before != 1 {
		t.Errorf("a token without a cached answer made %d calls, want 1", calls.Load()-before)
	}
	// Recovered: the next call after the hold takes the new answer.
	failing.Store(false)
	before = calls.Load()
	if _, err := c.Introspect(ctx, "tok", t0.Add(46*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Introspect(ctx, "tok", t0.Add(47*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load() - before; got != 1 {
		t.Errorf("after recovery: %d calls, want 1 (then a fresh answer)", got)
	}
}
