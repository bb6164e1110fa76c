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

// TestHeldAnswerEndsWithItsStaleWindow: an answer held while its endpoint
// fails (a status other than 200, or an answer that is not one) is served
// without asking again until the retry, but never past its stale end
// (max_ttl + stale_for): the back-off may run beyond it, and bounded
// staleness is the rule, not the retry's schedule.
func TestHeldAnswerEndsWithItsStaleWindow(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		body   string
	}{
		{"status-500", http.StatusInternalServerError, ""},
		{"bad-answer", http.StatusOK, `{"active":"yes"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			var failing atomic.Bool
			hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
				calls.Add(1)
				status, body := http.StatusOK, `{"active":true,"sub":"alice"}`
				if failing.Load() {
					status, body = tt.status, tt.body
				}
				return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
			})}
			c := newClient(t, introspect.Options{URL: "https://as.example.com/introspect", HTTPClient: hc,
				MaxTTL: 10 * time.Second, StaleFor: 5 * time.Second}) // stale end: +15s
			ctx := context.Background()
			t0 := time.Unix(1_000_000, 0)
			if _, err := c.Introspect(ctx, "tok", t0); err != nil {
				t.Fatal(err)
			}
			failing.Store(true)
			for _, st := range []struct {
				at    time.Duration
				calls int64
			}{
				{10 * time.Second, 1},         // fails: hold 1s
				{10500 * time.Millisecond, 0}, // held
				{11 * time.Second, 1},         // hold 2s
				{13 * time.Second, 1},         // hold 4s: the retry is at +17s, past the stale end
				{14 * time.Second, 0},         // held
			} {
				before := calls.Load()
				for range 20 {
					ans, err := c.Introspect(ctx, "tok", t0.Add(st.at))
					if err != nil || ans == nil || !strings.Contains(string(ans.Claims), `"alice"`) {
						t.Fatalf("at +%s: Introspect() = %v, %v; want the held answer", st.at, ans, err)
					}
				}
				if got := calls.Load() - before; got != st.calls {
					t.Errorf("at +%s: %d calls reached the failing endpoint for 20 requests, want %d", st.at, got, st.calls)
				}
			}
			if ans, err := c.Introspect(ctx, "tok", t0.Add(16*time.Second)); !errors.Is(err, verify.ErrKeysUnavailable) {
				t.Errorf("at +16s, past the stale end, the retry at +17s: Introspect() = %v, %v; want keys_unavailable", ans, err)
			}
		})
	}
}
