package jwks

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// gateHandler blocks the fetcher's goroutine on the first record whose
// message is msg, until release is closed: it pauses a flight after its
// fetch has answered and published, but before the flight is marked fetched.
type gateHandler struct {
	msg     string
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (g *gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (g *gateHandler) WithAttrs([]slog.Attr) slog.Handler       { return g }
func (g *gateHandler) WithGroup(string) slog.Handler            { return g }
func (g *gateHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == g.msg {
		first := false
		g.once.Do(func() { first = true })
		if first {
			close(g.reached)
			<-g.release
		}
	}
	return nil
}

// A kid asked for after a flight's fetch has answered (its set is already
// published) must not be judged by that answer: it should start (or wait for)
// a fetch that can see it, not be remembered missing for UnknownKidInterval.
// The window: after the source answered and before attempt returns
// (publish, status, log, state file fsync) the flight is still current.
func TestRefreshUnknownKidAskedAfterTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idp := &idpTransport{body: testkeys.JWKS(keyA)}
		gate := &gateHandler{msg: "jwks fetched", reached: make(chan struct{}), release: make(chan struct{})}
		f, err := New(Options{
			URL:    "https://idp.example/jwks",
			Client: &http.Client{Transport: idp},
			Jitter: func() float64 { return 0.5 },
			Logger: slog.New(gate),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		<-gate.reached // the start-up fetch answered {a} and published it
		// The IdP rotates in b right after that answer; a token with kid b arrives.
		idp.set(func(it *idpTransport) { it.body = testkeys.JWKS(keyA, keyB) })
		done := make(chan error, 1)
		go func() { done <- f.RefreshUnknownKid(context.Background(), "b") }()
		synctest.Wait() // it has joined the start-up flight (or started its own)
		close(gate.release)
		err = <-done
		synctest.Wait()
		if _, ok := f.Keys().Load().Lookup("b"); !ok {
			// b is not in the set: was it remembered missing?
			if f.Keys().RecentlyMissing("b", time.Now()) {
				t.Errorf("kid b, asked after the fetch answered {a}, is remembered missing for %v (RefreshUnknownKid = %v); IdP already serves it", DefaultUnknownKidInterval, err)
			}
			// And the next token with b, a second later, is refused without a fetch.
			time.Sleep(time.Second)
			if err := f.RefreshUnknownKid(context.Background(), "b"); err != nil {
				t.Errorf("RefreshUnknownKid(b) 1s later = %v; the budget was free when b was first asked", err)
			}
			if _, ok := f.Keys().Load().Lookup("b"); !ok {
				t.Errorf("kid b still not published 1s later (fetches %d)", f.Stats().Fetches)
			}
		}
	})
}

// slowIdP answers every request after delay (bubble time) and records when
// each request arrived.
type slowIdP struct {
	mu    sync.Mutex
	delay time.Duration
	at    []time.Time
	inner idpTransport
}

func (s *slowIdP) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	d := s.delay
	s.mu.Unlock()
	select {
	case <-time.After(d):
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return s.inner.RoundTrip(r)
}

// Sanity check of the budget: a flood of random kids for 10 minutes against
// a slow IdP (2s per answer, periodic refresh every ~1m) starts at most one
// fetch per UnknownKidInterval beyond the periodic ones, and nobody waits
// longer than UnknownKidWait.
func TestRefreshUnknownKidFloodBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idp := &slowIdP{delay: 2 * time.Second, inner: idpTransport{body: testkeys.JWKS(keyA)}}
		f, err := New(Options{URL: "https://idp.example/jwks", Client: &http.Client{Transport: idp},
			DefaultTTL: time.Minute, Jitter: func() float64 { return 0.5 }, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Ready(context.Background()); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		longest := time.Duration(0)
		for i := range 6000 { // one every 100ms for 10 minutes
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 100 * time.Millisecond)
				t0 := time.Now()
				_ = f.RefreshUnknownKid(context.Background(), "rnd-"+time.Now().Format(time.RFC3339Nano))
				mu.Lock()
				longest = max(longest, time.Since(t0))
				mu.Unlock()
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		s := f.Stats()
		maxUnknown := uint64(elapsed/DefaultUnknownKidInterval) + 1
		if s.UnknownKidRefreshes > maxUnknown {
			t.Errorf("UnknownKidRefreshes = %d over %v, want at most %d", s.UnknownKidRefreshes, elapsed, maxUnknown)
		}
		// Starts of consecutive fetches triggered by anything: list them.
		idp.mu.Lock()
		var gaps []time.Duration
		for i := 1; i < len(idp.at); i++ {
			gaps = append(gaps, idp.at[i].Sub(idp.at[i-1]))
		}
		idp.mu.Unlock()
		t.Logf("fetches %d, unknown-kid refreshes %d, suppressed %d, longest wait %v, gaps %v", s.Fetches, s.UnknownKidRefreshes, s.SuppressedRefreshes, longest, gaps)
		if longest > DefaultUnknownKidWait {
			t.Errorf("a request waited %v, more than %v", longest, DefaultUnknownKidWait)
		}
	})
}

// StaticKeys "verify while the source is still unreachable" — unless
// StateDir holds a set, which replaces them at start even when it is past
// StaleFor: then the static secret verifies nothing until the source
// answers, where without a state_dir it would.
func TestStaticKeysBesideAStaleStateFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		secret, _ := staticKeys(t)
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		dir := t.TempDir()
		o := Options{Issuer: "https://idp.example/", URL: ks.URL(), StateDir: dir, StaleFor: time.Hour, StaticKeys: []*cache.Key{secret}}
		clk := newBubbleClock()
		f, _ := startFetcher(t, clk, o)
		f.Close() // the state file holds {a}, fetched at t0

		ks.set(func(ks *keyServer) { ks.status = http.StatusBadGateway })
		clk.Advance(2 * time.Hour) // the persisted set is past StaleFor
		f, _ = startFetcher(t, clk, o)
		set := f.Keys().Load()
		if h, ok := set.Lookup("h"); !ok || h != secret || !set.Usable(clk.Now()) {
			t.Errorf("restart with a stale state file and the IdP down: static secret usable = %v (set UsableUntil %v, now %v); without state_dir it is usable",
				ok && set.Usable(clk.Now()), set.UsableUntil, clk.Now())
		}
	})
}
