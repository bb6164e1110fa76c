package introspect_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/introspect"
)

// TestSharedCacheHungEndpointServesStaleAnswers: with cache.shared, a
// replica whose flight waited for another replica's lock calls the hung
// server with what is left of the flight's budget (MaxWait + Timeout),
// which runs out before the call's own timeout. That call got no response
// either, but it cleared the "unreachable" mark a timed-out call had set,
// and the next call refused at max_concurrent was keys_unavailable with
// its stale answer at hand (what TestHungEndpointServesStaleAnswers fixed
// without a shared cache). A flight's own budget running out says nothing
// about the server: the mark is left as it was.
func TestSharedCacheHungEndpointServesStaleAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("real timeouts of a few seconds")
	}
	srv := redistest.Start(t)
	var hung atomic.Bool
	stop := make(chan struct{})
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // a closed connection then ends the context
		if hung.Load() {
			select { // never answers
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"active":true,"sub":"alice"}`))
	}))
	t.Cleanup(as.Close)
	t.Cleanup(func() { close(stop) })
	// The flight's budget is MaxWait + Timeout = 3.5s: a flight that
	// waited for a lock held through a 2s timeout has at most 1.5s left.
	cs := replicas(t, 2, srv, introspect.Options{URL: as.URL, SharedKeyFile: sharedKey(t, 'k', 32),
		MaxConcurrent: 1, MaxWait: 1500 * time.Millisecond, Timeout: 2 * time.Second, MaxTTL: time.Second, StaleFor: time.Hour})
	other, c := cs[0], cs[1]
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

	// The other replica's call for tok-c holds tok-c's lock until its
	// timeout; this replica's flight for tok-c waits for it, then calls
	// with the rest of its budget.
	otherDone := make(chan struct{})
	go func() { _, _ = other.Introspect(ctx, "tok-c", t2); close(otherDone) }()
	waitInFlight(t, other, 1)
	_, _ = c.Introspect(ctx, "tok-c", t2) // no answer at hand: keys_unavailable
	<-otherDone

	// tok-d's call to the hung server holds this replica's one slot.
	dDone := make(chan struct{})
	go func() { _, _ = c.Introspect(ctx, "tok-d", t2); close(dDone) }()
	waitInFlight(t, c, 1)
	ans, err := c.Introspect(ctx, "tok-b", t2)
	if err != nil || ans == nil {
		t.Errorf("Introspect(tok-b) = %v, %v while the server hangs; want its stale answer (a flight whose own budget ran out cleared the unreachable mark)", ans, err)
	}
	<-dDone
}

// waitInFlight waits until c has n upstream calls in flight.
func waitInFlight(t *testing.T, c *introspect.Client, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); c.Stats().InFlight != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Stats().InFlight = %d, want %d", c.Stats().InFlight, n)
		}
	}
}
