package introspect_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// roundTripper is an http.RoundTripper of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHungEndpointServesStaleAnswers: an authorization server that stops
// answering (a black-holed address, a hung process) is "unreachable": SPEC
// has every cached answer served up to stale_for. Its calls, though, each
// hold one of the max_concurrent slots until the call's timeout, and a call
// that finds no slot (ErrOverloaded) was answered keys_unavailable, never
// stale (a flood of random tokens must not keep a revoked token alive while
// the server is healthy). Once a call has failed, the server is known not
// to answer: a token whose stale answer is at hand is answered from it,
// not refused because the other tokens' calls to the hung server hold the
// slots. With max_concurrent 32 and a 5s timeout, more than ~6 distinct
// users a second made stale_for do nothing.
func TestHungEndpointServesStaleAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hung atomic.Bool
		hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			if hung.Load() {
				<-r.Context().Done() // the server never answers
				return nil, r.Context().Err()
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"active":true,"sub":"alice"}`)), Request: r}, nil
		})}
		c := newClient(t, introspect.Options{URL: "https://as.example.com/introspect", HTTPClient: hc,
			MaxConcurrent: 1, MaxWait: time.Millisecond, Timeout: time.Second, MaxTTL: time.Second, StaleFor: time.Minute})
		ctx := context.Background()
		t1 := time.Now()
		for _, tok := range []string{"tok-a", "tok-b"} {
			if _, err := c.Introspect(ctx, tok, t1); err != nil {
				t.Fatal(err)
			}
		}
		hung.Store(true)
		t2 := t1.Add(2 * time.Second) // past max_ttl, within stale_for
		if _, err := c.Introspect(ctx, "tok-a", t2); err != nil {
			t.Fatalf("Introspect(tok-a) once its call timed out = %v, want the stale answer", err)
		}
		// The server still hangs: tok-a's next call holds the one slot.
		done := make(chan error, 1)
		go func() { _, err := c.Introspect(ctx, "tok-a", t2.Add(time.Second)); done <- err }()
		synctest.Wait()
		if st := c.Stats(); st.InFlight != 1 {
			t.Fatalf("Stats().InFlight = %d, want tok-a's call in flight", st.InFlight)
		}
		ans, err := c.Introspect(ctx, "tok-b", t2.Add(time.Second))
		if err != nil || ans == nil {
			t.Errorf("Introspect(tok-b) = %v, %v while the server hangs; want its stale answer (SPEC: an unreachable server is answered from cache up to stale_for)", ans, err)
		}
		if err := <-done; err != nil {
			t.Errorf("Introspect(tok-a) = %v, want the stale answer", err)
		}
		// A token without an answer at hand is still keys_unavailable.
		go func() { _, err := c.Introspect(ctx, "tok-a", t2.Add(3*time.Second)); done <- err }()
		synctest.Wait()
		if _, err := c.Introspect(ctx, "tok-new", t2.Add(3*time.Second)); !errors.Is(err, verify.ErrKeysUnavailable) {
			t.Errorf("Introspect(tok-new) = %v, want keys_unavailable", err)
		}
		<-done
	})
}

// TestAnsweredFailureKeepsTheSlotRule: a server that answers, even with a
// 5xx, is not unreachable: a crafted token that makes it fail must not turn
// off the rule that a call refused at max_concurrent is never answered
// stale (with a flood holding the slots, a revoked token's stale active
// answer would serve). Nor is a shared-cache caller that hangs up.
func TestAnsweredFailureKeepsTheSlotRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			body, _ := io.ReadAll(r.Body)
			switch {
			case strings.Contains(string(body), "crafted"):
				return &http.Response{StatusCode: http.StatusInternalServerError, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
			case strings.Contains(string(body), "flood"):
				select { // slow, but answering
				case <-release:
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"active":true,"sub":"alice"}`)), Request: r}, nil
		})}
		c := newClient(t, introspect.Options{URL: "https://as.example.com/introspect", HTTPClient: hc,
			MaxConcurrent: 1, MaxWait: time.Millisecond, Timeout: time.Minute, MaxTTL: time.Second, StaleFor: time.Hour})
		ctx := context.Background()
		t1 := time.Now()
		if _, err := c.Introspect(ctx, "revoked", t1); err != nil {
			t.Fatal(err)
		}
		t2 := t1.Add(2 * time.Second) // past max_ttl, within stale_for
		if _, err := c.Introspect(ctx, "crafted", t2); !errors.Is(err, verify.ErrKeysUnavailable) {
			t.Fatalf("Introspect(crafted) = %v, want keys_unavailable", err)
		}
		done := make(chan struct{})
		go func() { _, _ = c.Introspect(ctx, "flood", t2); close(done) }()
		synctest.Wait()
		if _, err := c.Introspect(ctx, "revoked", t2); !errors.Is(err, verify.ErrKeysUnavailable) {
			t.Errorf("Introspect(revoked) with the slot held after a 500 = %v, want keys_unavailable (not the stale answer)", err)
		}
		close(release)
		<-done
	})
}
