package jwks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

func TestUnknownKidWaitOption(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		wantWait time.Duration
		wantErr  error
	}{
		{name: "default", opts: Options{}, wantWait: DefaultUnknownKidWait},
		{name: "default-with-shortest-fetch-timeout", opts: Options{FetchTimeout: MinAnyInterval}, wantWait: DefaultUnknownKidWait},
		{name: "set", opts: Options{UnknownKidWait: 2 * time.Second}, wantWait: 2 * time.Second},
		{name: "equal-to-fetch-timeout", opts: Options{UnknownKidWait: time.Minute, FetchTimeout: time.Minute}, wantWait: time.Minute},
		{name: "above-fetch-timeout", opts: Options{UnknownKidWait: 11 * time.Second}, wantErr: ErrInvalidOptions},
		{name: "negative", opts: Options{UnknownKidWait: -time.Millisecond}, wantErr: ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.URL = "https://idp.example/jwks"
			o, err := tt.opts.withDefaults()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("withDefaults() = %v, want %v", err, tt.wantErr)
			}
			if err == nil && o.UnknownKidWait != tt.wantWait {
				t.Errorf("UnknownKidWait = %v, want %v", o.UnknownKidWait, tt.wantWait)
			}
		})
	}
}

// idpTransport is an IdP that accepts every request and then answers its
// body, or, while hanging, nothing at all until the request ends (or, with
// a release channel, until that closes). It does no I/O: it runs inside a
// synctest bubble.
type idpTransport struct {
	mu       sync.Mutex
	body     []byte
	hang     bool
	release  chan struct{} // non-nil: a hanging request answers when it closes
	requests int
}

func (it *idpTransport) set(fn func(it *idpTransport)) {
	it.mu.Lock()
	defer it.mu.Unlock()
	fn(it)
}

func (it *idpTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	it.mu.Lock()
	it.requests++
	hang, release := it.hang, it.release
	it.mu.Unlock()
	if hang {
		select {
		case <-release: // nil: never
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	it.mu.Lock()
	body := it.body
	it.mu.Unlock()
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": {"application/jwk-set+json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}, nil
}

// arrival is one RefreshUnknownKid call at a time after the scenario's start.
type arrival struct {
	name    string
	at      time.Duration // when it calls, after the start
	kid     string
	wantErr error         // nil: the refresh completed
	wantEnd time.Duration // when it must have returned, after the start
}

// runArrivals calls RefreshUnknownKid for each arrival at its time (in the
// bubble's clock) and checks when it returned and with what.
func runArrivals(t *testing.T, f *Fetcher, start time.Time, arrivals []arrival) {
	t.Helper()
	var wg sync.WaitGroup
	for _, a := range arrivals {
		wg.Go(func() {
			time.Sleep(time.Until(start.Add(a.at)))
			err := f.RefreshUnknownKid(context.Background(), a.kid)
			end := time.Since(start)
			if !errors.Is(err, a.wantErr) || (a.wantErr == nil && err != nil) {
				t.Errorf("%s: RefreshUnknownKid(%s) at %v = %v, want %v", a.name, a.kid, a.at, err, a.wantErr)
			}
			if end != a.wantEnd {
				t.Errorf("%s: arrived at %v, returned at %v, want %v", a.name, a.at, end, a.wantEnd)
			}
		})
	}
	wg.Wait()
}

// Against an IdP that accepts and does not answer, a request waits for an
// unknown-kid refresh at most UnknownKidWait from the refresh's start: the
// starter and the requests joining it return when that wait ends, a later
// one at once; the refresh goes on and publishes what it finds; when a hung
// refresh times out, no request waits on the next one the budget did not pay
// for; Close leaves no goroutine behind.
func TestRefreshUnknownKidBoundedWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ignore := goleak.IgnoreCurrent()
		idp := &idpTransport{body: testkeys.JWKS(keyA)}
		f, err := New(Options{
			URL:    "https://idp.example/jwks",
			Client: &http.Client{Transport: idp},
			Jitter: func() float64 { return 0.5 }, // no jitter: the retry times below are exact
			Logger: slog.New(slog.DiscardHandler),
			// FetchTimeout 10s, UnknownKidInterval 30s, UnknownKidWait 500ms:
			// the defaults.
		})
		if err != nil {
			t.Fatalf("New() = %v", err)
		}
		if err := f.Ready(context.Background()); err != nil {
			t.Fatalf("Ready() = %v", err)
		}
		synctest.Wait()

		// A refresh that hangs 2s, then brings the new key b.
		release := make(chan struct{})
		idp.set(func(it *idpTransport) { it.hang, it.release, it.body = true, release, testkeys.JWKS(keyA, keyB) })
		start := time.Now()
		go func() {
			time.Sleep(2 * time.Second)
			close(release)
		}()
		runArrivals(t, f, start, []arrival{
			{name: "starter", at: 0, kid: "b", wantErr: ErrRefreshPending, wantEnd: 500 * time.Millisecond},
			{name: "joiner", at: 100 * time.Millisecond, kid: "b", wantErr: ErrRefreshPending, wantEnd: 500 * time.Millisecond},
			{name: "joiner-random", at: 499 * time.Millisecond, kid: "random-1", wantErr: ErrRefreshPending, wantEnd: 500 * time.Millisecond},
			{name: "late", at: 500 * time.Millisecond, kid: "b", wantErr: ErrRefreshPending, wantEnd: 500 * time.Millisecond},
			{name: "later", at: 1500 * time.Millisecond, kid: "random-2", wantErr: ErrRefreshPending, wantEnd: 1500 * time.Millisecond},
		})
		time.Sleep(time.Until(start.Add(2 * time.Second)))
		synctest.Wait() // the refresh has answered and published
		if _, ok := f.Keys().Load().Lookup("b"); !ok {
			t.Fatalf("kid b not published by the background refresh")
		}
		if !f.Keys().RecentlyMissing("random-1", time.Now()) {
			t.Errorf("RecentlyMissing(random-1) = false, want a kid asked during the refresh remembered")
		}
		if err := f.RefreshUnknownKid(context.Background(), "random-3"); !errors.Is(err, ErrSuppressed) {
			t.Errorf("RefreshUnknownKid(random-3) after the refresh = %v, want %v (budget spent)", err, ErrSuppressed)
		}
		if s := f.Stats(); s.Fetches != 2 || s.UnknownKidRefreshes != 1 {
			t.Errorf("Stats() = %+v, want 2 fetches and 1 unknown-kid refresh", s)
		}

		// A refresh that hangs until FetchTimeout, then retries that hang too.
		time.Sleep(30 * time.Second) // the budget is back
		idp.set(func(it *idpTransport) { it.release = nil })
		start = time.Now()
		runArrivals(t, f, start, []arrival{
			{name: "starter", at: 0, kid: "c", wantErr: ErrRefreshPending, wantEnd: 500 * time.Millisecond},
			{name: "joiner", at: 200 * time.Millisecond, kid: "c", wantErr: ErrRefreshPending, wantEnd: 500 * time.Millisecond},
			{name: "late", at: 5 * time.Second, kid: "d", wantErr: ErrRefreshPending, wantEnd: 5 * time.Second},
			// The fetch timed out at 10s; the retry (1s backoff) starts at 11s.
			{name: "after-timeout", at: 10*time.Second + time.Millisecond, kid: "e", wantErr: ErrSuppressed, wantEnd: 10*time.Second + time.Millisecond},
			{name: "during-retry", at: 11*time.Second + 100*time.Millisecond, kid: "f", wantErr: ErrSuppressed, wantEnd: 11*time.Second + 100*time.Millisecond},
			// The budget is back at 30s; the flight in progress (the second
			// retry, from 23s) started more than the wait ago: no wait, and
			// it spends the budget from its start.
			{name: "budget-back", at: 31 * time.Second, kid: "g", wantErr: ErrRefreshPending, wantEnd: 31 * time.Second},
			{name: "spent-by-retry", at: 34 * time.Second, kid: "h", wantErr: ErrSuppressed, wantEnd: 34 * time.Second},
		})
		if s := f.Stats(); s.UnknownKidRefreshes != 2 {
			t.Errorf("Stats().UnknownKidRefreshes = %d, want 2: no unknown kid started a fetch while one hung", s.UnknownKidRefreshes)
		}

		if err := f.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
		goleak.VerifyNone(t, ignore)
	})
}

// A caller's context shorter than the wait ends its wait; the flight goes
// on for the others.
func TestRefreshUnknownKidWaitAndContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idp := &idpTransport{body: testkeys.JWKS(keyA)}
		f := newIdleFetcher(t, idp, Options{UnknownKidWait: 2 * time.Second})
		release := make(chan struct{})
		idp.set(func(it *idpTransport) { it.hang, it.release, it.body = true, release, testkeys.JWKS(keyA, keyB) })
		time.AfterFunc(time.Second, func() { close(release) })

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := f.RefreshUnknownKid(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 100*time.Millisecond {
			t.Errorf("RefreshUnknownKid(100ms ctx) = %v after %v, want %v after 100ms", err, time.Since(start), context.DeadlineExceeded)
		}
		if err := f.RefreshUnknownKid(context.Background(), "b"); err != nil || time.Since(start) != time.Second {
			t.Errorf("RefreshUnknownKid(joined) = %v after %v, want nil when the refresh answers at 1s", err, time.Since(start))
		}
		if _, ok := f.Keys().Load().Lookup("b"); !ok {
			t.Errorf("kid b missing after the refresh")
		}
	})
}

// A storm of unknown kids against a hanging IdP: nobody waits past
// UnknownKidWait from the flight's start, whenever it arrives.
func TestRefreshUnknownKidStormHanging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idp := &idpTransport{body: testkeys.JWKS(keyA)}
		f := newIdleFetcher(t, idp, Options{FetchTimeout: 5 * time.Minute})
		idp.set(func(it *idpTransport) { it.hang = true })
		start := time.Now()
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				at := time.Duration(i) * 10 * time.Millisecond // over 2s
				time.Sleep(at)
				err := f.RefreshUnknownKid(context.Background(), fmt.Sprintf("random-%d", i))
				waited := time.Since(start) - at
				if err == nil || waited > max(500*time.Millisecond-at, 0) {
					t.Errorf("arrival at %v: RefreshUnknownKid() = %v after waiting %v, want an error within the wait", at, err, waited)
				}
			})
		}
		wg.Wait()
		if s := f.Stats(); s.Fetches != 2 || s.UnknownKidRefreshes != 1 {
			t.Errorf("Stats() = %+v, want one unknown-kid fetch after start-up", s)
		}
	})
}

// newIdleFetcher starts a fetcher of https://idp.example/jwks served by idp,
// with opts (URL, Client and Logger set here), closed at the end of the
// test. It returns once the start-up fetch has published and its flight has
// ended, so that the next unknown kid starts a flight of its own. Call it
// inside a synctest bubble.
func newIdleFetcher(t *testing.T, idp *idpTransport, opts Options) *Fetcher {
	t.Helper()
	opts.URL, opts.Client, opts.Logger = "https://idp.example/jwks", &http.Client{Transport: idp}, slog.New(slog.DiscardHandler)
	f, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	return f
}
