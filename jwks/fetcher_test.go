package jwks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
)

func TestNewOptions(t *testing.T) {
	const u = "https://idp.example/jwks"
	tests := []struct {
		name    string
		opts    Options
		wantErr error
	}{
		{name: "url", opts: Options{URL: "https://idp.example/jwks"}},
		{name: "loopback-http", opts: Options{URL: "http://127.0.0.1:8080/jwks"}},
		{name: "insecure-allowed", opts: Options{URL: "http://idp.example/jwks", InsecureAllowHTTP: true}},
		{name: "discovery", opts: Options{Discovery: true, Issuer: "https://idp.example/"}},
		{name: "file", opts: Options{File: "keys.json"}},
		{name: "one-second-intervals", opts: Options{URL: "https://idp.example/jwks", MinInterval: time.Second,
			MaxInterval: time.Second, DefaultTTL: time.Second, UnknownKidInterval: time.Second, StaleFor: time.Second}},
		{name: "no-source", opts: Options{}, wantErr: ErrInvalidOptions},
		{name: "two-sources", opts: Options{URL: "https://idp.example/jwks", File: "k.json"}, wantErr: ErrInvalidOptions},
		{name: "discovery-without-issuer", opts: Options{Discovery: true}, wantErr: ErrInvalidOptions},
		{name: "http-remote", opts: Options{URL: "http://idp.example/jwks"}, wantErr: ErrInsecureURL},
		{name: "http-discovery", opts: Options{Discovery: true, Issuer: "http://idp.example"}, wantErr: ErrInsecureURL},
		{name: "ftp", opts: Options{URL: "ftp://idp.example/jwks"}, wantErr: ErrInsecureURL},
		{name: "min-above-max", opts: Options{URL: "https://idp.example/jwks", MinInterval: time.Hour, MaxInterval: time.Minute}, wantErr: ErrInvalidOptions},
		{name: "interval-below-1s", opts: Options{URL: "https://idp.example/jwks", UnknownKidInterval: time.Millisecond}, wantErr: ErrInvalidOptions},
		{name: "negative-stale", opts: Options{URL: "https://idp.example/jwks", StaleFor: -time.Second}, wantErr: ErrInvalidOptions},
		{name: "state-dir-not-a-directory", opts: Options{URL: "https://idp.example/jwks", StateDir: "fetcher_test.go/state"}, wantErr: ErrInvalidOptions},
		{name: "negative-max-bytes", opts: Options{URL: "https://idp.example/jwks", MaxBytes: -1}, wantErr: ErrInvalidOptions},
		{name: "bounds", opts: Options{URL: u, FetchTimeout: MaxFetchTimeout, MaxBytes: MaxMaxBytes, MaxKeys: MaxMaxKeys}},
		{name: "lower-bounds", opts: Options{URL: u, FetchTimeout: MinAnyInterval, MaxBytes: MinMaxBytes, MaxKeys: 1}},
		{name: "fetch-timeout-below-1s", opts: Options{URL: u, FetchTimeout: time.Second - 1}, wantErr: ErrInvalidOptions},
		{name: "fetch-timeout-above-max", opts: Options{URL: u, FetchTimeout: MaxFetchTimeout + 1}, wantErr: ErrInvalidOptions},
		{name: "max-bytes-below-min", opts: Options{URL: u, MaxBytes: MinMaxBytes - 1}, wantErr: ErrInvalidOptions},
		{name: "max-bytes-above-max", opts: Options{URL: u, MaxBytes: MaxMaxBytes + 1}, wantErr: ErrInvalidOptions},
		{name: "max-keys-above-max", opts: Options{URL: u, MaxKeys: MaxMaxKeys + 1}, wantErr: ErrInvalidOptions},
		{name: "negative-max-keys", opts: Options{URL: u, MaxKeys: -1}, wantErr: ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.StateDir != "" {
				// New itself refuses a state directory it cannot create.
				if _, err := New(tt.opts); !errors.Is(err, tt.wantErr) {
					t.Fatalf("New() = %v, want %v", err, tt.wantErr)
				}
				return
			}
			o, err := tt.opts.withDefaults()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("withDefaults() = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (o.Keys == nil || o.MinInterval == 0 || o.FetchTimeout == 0 || o.FilePollInterval == 0) {
				t.Errorf("withDefaults() left zero values: %+v", o)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		url      string
		insecure bool
		wantErr  error
	}{
		{url: "https://idp.example/keys"},
		{url: "http://127.0.0.1:9/keys"},
		{url: "http://127.1.2.3/keys"},
		{url: "http://[::1]:9/keys"},
		{url: "http://localhost:9/keys"},
		{url: "http://LOCALHOST/keys"},
		{url: "http://idp.example/keys", insecure: true},
		{url: "http://idp.example/keys", wantErr: ErrInsecureURL},
		{url: "http://10.0.0.1/keys", wantErr: ErrInsecureURL},
		{url: "http://localhost.idp.example/keys", wantErr: ErrInsecureURL},
		{url: "http://127.0.0.1.nip.io/keys", wantErr: ErrInsecureURL},
		{url: "file:///etc/passwd", wantErr: ErrInsecureURL},
		{url: "https:///keys", wantErr: ErrInsecureURL},
		{url: "/keys", wantErr: ErrInsecureURL},
	}
	for _, tt := range tests {
		name := strings.NewReplacer("://", "-", "/", "-", ":", "-").Replace(tt.url)
		t.Run(name, func(t *testing.T) {
			if _, err := parseURL(tt.url, tt.insecure); !errors.Is(err, tt.wantErr) {
				t.Errorf("parseURL(%q) = %v, want %v", tt.url, err, tt.wantErr)
			}
		})
	}
}

// The refresh interval comes from Cache-Control/Expires, clamped to
// [MinInterval, MaxInterval], DefaultTTL without caching headers, ±10% jitter.
func TestFetcherRefreshInterval(t *testing.T) {
	date := t0.Add(-time.Hour).Format(http.TimeFormat)
	tests := []struct {
		name   string
		header map[string]string
		jitter float64
		want   time.Duration
	}{
		{name: "max-age", header: map[string]string{"Cache-Control": "public, max-age=300"}, want: 5 * time.Minute},
		{name: "max-age-below-min", header: map[string]string{"Cache-Control": "max-age=5"}, want: time.Minute},
		{name: "max-age-above-max", header: map[string]string{"Cache-Control": "max-age=864000"}, want: time.Hour},
		{name: "max-age-huge", header: map[string]string{"Cache-Control": "max-age=99999999999999999"}, want: time.Hour},
		{name: "max-age-less-age", header: map[string]string{"Cache-Control": "max-age=600", "Age": "120"}, want: 8 * time.Minute},
		{name: "max-age-beats-expires", header: map[string]string{"Cache-Control": "max-age=300", "Date": date, "Expires": t0.Format(http.TimeFormat)}, want: 5 * time.Minute},
		{name: "no-cache", header: map[string]string{"Cache-Control": "no-cache, max-age=600"}, want: time.Minute},
		{name: "no-store", header: map[string]string{"Cache-Control": "no-store"}, want: time.Minute},
		{name: "expires-minus-date", header: map[string]string{"Date": date, "Expires": t0.Add(-time.Hour + 10*time.Minute).Format(http.TimeFormat)}, want: 10 * time.Minute},
		{name: "expires-invalid", header: map[string]string{"Expires": "0"}, want: time.Minute},
		{name: "malformed-max-age", header: map[string]string{"Cache-Control": "max-age=soon"}, want: 15 * time.Minute},
		{name: "no-headers", want: 15 * time.Minute},
		{name: "jitter-low", jitter: 0, want: 15 * time.Minute * 9 / 10},
		{name: "jitter-high", jitter: 0.999999, want: 16*time.Minute + 30*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, testkeys.JWKS(keyA))
				ks.set(func(ks *keyServer) {
					for k, v := range tt.header {
						ks.header.Set(k, v)
					}
				})
				clk := newBubbleClock()
				jitter := tt.jitter
				if !strings.HasPrefix(tt.name, "jitter") {
					jitter = 0.5
				}
				f, got := startFetcher(t, clk, Options{URL: ks.URL(), MinInterval: time.Minute, MaxInterval: time.Hour,
					Jitter: func() float64 { return jitter }})
				if got.Round(time.Millisecond) != tt.want.Round(time.Millisecond) {
					t.Errorf("refresh interval = %v, want %v", got, tt.want)
				}
				if st := f.Keys().Status(); !st.NextRefresh.Equal(t0.Add(got)) || !st.LastSuccess.Equal(t0) {
					t.Errorf("Status() = %+v, want NextRefresh %v, LastSuccess %v", st, t0.Add(got), t0)
				}
			})
		})
	}
}

// A conditional GET answered 304 keeps the set (same keys), extends its
// staleness, and counts as a success.
func TestFetcherNotModified(t *testing.T) {
	tests := []struct {
		name, etag, lastModified string
		wantHeader, wantValue    string
	}{
		{name: "etag", etag: `"v1"`, wantHeader: "If-None-Match", wantValue: `"v1"`},
		{name: "last-modified", lastModified: "Fri, 31 Dec 1999 00:00:00 GMT", wantHeader: "If-Modified-Since", wantValue: "Fri, 31 Dec 1999 00:00:00 GMT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, testkeys.JWKS(keyA, keyB))
				ks.set(func(ks *keyServer) { ks.etag, ks.lastModified = tt.etag, tt.lastModified })
				clk := newBubbleClock()
				f, d := startFetcher(t, clk, Options{URL: ks.URL(), StaleFor: time.Hour})
				first := f.Keys().Load()
				clk.step(t, d)
				if got := ks.requestHeader().Get(tt.wantHeader); got != tt.wantValue {
					t.Errorf("request %s = %q, want %q", tt.wantHeader, got, tt.wantValue)
				}
				second := f.Keys().Load()
				if second == first || second.Keys()[0] != first.Keys()[0] || second.Len() != 2 {
					t.Errorf("after 304: set %p keys %v, want a new snapshot of the same keys %v", second, second.Keys(), first.Keys())
				}
				now := t0.Add(d)
				if !second.FetchedAt.Equal(now) || !second.UsableUntil.Equal(now.Add(time.Hour)) {
					t.Errorf("after 304: FetchedAt %v UsableUntil %v, want %v and %v", second.FetchedAt, second.UsableUntil, now, now.Add(time.Hour))
				}
				if s := f.Stats(); s.Fetches != 2 || s.NotModified != 1 || s.Errors != 0 {
					t.Errorf("Stats() = %+v, want 2 fetches, 1 not modified, 0 errors", s)
				}
				if st := f.Keys().Status(); !st.LastSuccess.Equal(now) || st.Stats.NotModified != 1 {
					t.Errorf("Status() = %+v, want LastSuccess %v and NotModified 1", st, now)
				}
			})
		})
	}
}

// An unchanged 200 body (no validators) is not parsed again.
func TestFetcherUnchangedBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA, testkeys.JWK{Key: testkeys.Public(testkeys.RSA1024), Kid: "weak"}))
		clk := newBubbleClock()
		f, d := startFetcher(t, clk, Options{URL: ks.URL()})
		first := f.Keys().Load()
		clk.step(t, d)
		second := f.Keys().Load()
		if second == first || second.Keys()[0] != first.Keys()[0] || !second.FetchedAt.Equal(t0.Add(d)) {
			t.Errorf("unchanged body: set %+v, want the same keys with new times", second)
		}
		if s := f.Stats(); s.KeysSkipped != 1 || s.Fetches != 2 {
			t.Errorf("Stats() = %+v, want the weak key skipped once over 2 fetches", s)
		}
	})
}

// Failures retry with exponential backoff from 1s, capped at MinInterval,
// keep the last good set, and are reported in the status; the first success
// resets the schedule.
func TestFetcherBackoff(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		breakIt   func(ks *keyServer)
		wantError string
	}{
		{name: "status-500", breakIt: func(ks *keyServer) { ks.status = http.StatusInternalServerError }, wantError: "500"},
		{name: "status-404", breakIt: func(ks *keyServer) { ks.status = http.StatusNotFound }, wantError: "404"},
		{name: "garbage", breakIt: func(ks *keyServer) { ks.body = []byte("<html>oops</html>") }, wantError: ErrMalformed.Error()},
		{name: "empty-set", breakIt: func(ks *keyServer) { ks.body = []byte(`{"keys":[]}`) }, wantError: ErrNoKeys.Error()},
		{name: "all-skipped", breakIt: func(ks *keyServer) {
			ks.body = testkeys.JWKS(testkeys.JWK{Key: testkeys.Public(testkeys.RSA1024), Kid: "weak"})
		}, wantError: ErrNoKeys.Error()},
		{name: "too-large", opts: Options{MaxBytes: MinMaxBytes}, breakIt: func(ks *keyServer) {
			ks.body = testkeys.JWKS(keyA, keyB, keyC, keyA, keyB, keyC)
		}, wantError: ErrTooLarge.Error()},
		// Refused whole, never cut at MaxKeys: the keys past the limit may be
		// the ones in use.
		{name: "more-keys-than-max-keys", opts: Options{MaxKeys: 2}, breakIt: func(ks *keyServer) {
			ks.body = testkeys.JWKS(keyA, keyB, keyC)
		}, wantError: ErrTooLarge.Error()},
		{name: "timeout", opts: Options{FetchTimeout: MinAnyInterval}, breakIt: func(ks *keyServer) {
			ks.block = make(chan struct{}) // never closed: the request ends by its timeout
		}, wantError: "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, testkeys.JWKS(keyA))
				clk := newBubbleClock()
				o := tt.opts
				o.URL, o.MinInterval, o.DefaultTTL = ks.URL(), 10*time.Second, time.Hour
				f, d := startFetcher(t, clk, o)
				good := f.Keys().Load()
				ks.set(tt.breakIt)
				for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
					d = clk.step(t, d)
					if d != want {
						t.Errorf("retry %d in %v, want %v", i+1, d, want)
					}
					st := f.Keys().Status()
					if st.ConsecutiveFailures != i+1 || !strings.Contains(st.LastError, tt.wantError) {
						t.Errorf("Status() = %d failures, error %q; want %d, containing %q", st.ConsecutiveFailures, st.LastError, i+1, tt.wantError)
					}
				}
				if f.Keys().Load() != good {
					t.Errorf("a failed fetch replaced the last good set")
				}
				if s := f.Stats(); s.Errors != 6 {
					t.Errorf("Stats().Errors = %d, want 6", s.Errors)
				}
				ks.set(func(ks *keyServer) { ks.status, ks.block, ks.body = 0, nil, testkeys.JWKS(keyB) })
				if d = clk.step(t, d); d != time.Hour {
					t.Errorf("after recovery: refresh in %v, want the default TTL %v", d, time.Hour)
				}
				if st := f.Keys().Status(); st.ConsecutiveFailures != 0 || st.LastError != "" {
					t.Errorf("after recovery: Status() = %+v, want no failures", st)
				}
				if _, ok := f.Keys().Load().Lookup("b"); !ok {
					t.Errorf("after recovery: kid b missing")
				}
			})
		})
	}
}

// The last good set serves for StaleFor after the last success; then the
// issuer has no usable keys, until a fetch succeeds again.
func TestFetcherStaleWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		const staleFor = time.Minute
		f, d := startFetcher(t, clk, Options{URL: ks.URL(), MinInterval: 10 * time.Second, DefaultTTL: 30 * time.Second, StaleFor: staleFor})
		if err := f.Ready(context.Background()); err != nil {
			t.Fatalf("Ready() = %v", err)
		}
		ks.set(func(ks *keyServer) { ks.status = http.StatusServiceUnavailable })
		for clk.Now().Sub(t0) < 2*staleFor {
			d = clk.step(t, d)
			now := clk.Now()
			set := f.Keys().Load()
			if want := !now.After(t0.Add(staleFor)); set.Usable(now) != want {
				t.Fatalf("at +%v: Usable() = %v, want %v", now.Sub(t0), !want, want)
			}
			if st := f.Keys().Status(); !st.LastAttempt.Equal(now) || !st.LastSuccess.Equal(t0) || st.LastError == "" {
				t.Fatalf("at +%v: Status() = %+v, want an attempt now and the success at start", now.Sub(t0), st)
			}
		}
		ks.set(func(ks *keyServer) { ks.status = 0 })
		clk.step(t, d)
		now := clk.Now()
		if set := f.Keys().Load(); !set.Usable(now) || !set.UsableUntil.Equal(now.Add(staleFor)) {
			t.Errorf("after recovery: Usable() = false or UsableUntil %v, want %v", set.UsableUntil, now.Add(staleFor))
		}
	})
}

// Rotation: a new kid appears through one unknown-kid refresh; a removed key
// leaves at the next refresh; unchanged keys keep their pointer.
func TestFetcherRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		f, _ := startFetcher(t, clk, Options{URL: ks.URL()})
		a, _ := f.Keys().Load().Lookup("a")

		ks.setBody(testkeys.JWKS(keyA, keyB))
		if err := f.RefreshUnknownKid(context.Background(), "b"); err != nil {
			t.Fatalf("RefreshUnknownKid(b) = %v, want nil", err)
		}
		d := clk.waitArmed(t) // the refresh reset the schedule
		set := f.Keys().Load()
		if _, ok := set.Lookup("b"); !ok {
			t.Fatalf("after refresh: kid b missing")
		}
		if got, _ := set.Lookup("a"); got != a {
			t.Errorf("after refresh: key a = %p, want the unchanged pointer %p", got, a)
		}
		if s := f.Stats(); s.Fetches != 2 || s.UnknownKidRefreshes != 1 || ks.jwksHits.Load() != 2 {
			t.Errorf("Stats() = %+v, hits %d; want 2 fetches, 1 unknown-kid refresh", s, ks.jwksHits.Load())
		}

		ks.setBody(testkeys.JWKS(keyB))
		clk.step(t, d)
		set = f.Keys().Load()
		if _, ok := set.Lookup("a"); ok || set.Len() != 1 {
			t.Errorf("after the next refresh: kids %v, want only b", set.Keys())
		}
	})
}

// A storm of unknown kids costs the IdP at most one fetch per
// UnknownKidInterval: one caller reserves the budget, the others join the
// flight or are refused at once.
func TestRefreshUnknownKidStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		f, _ := startFetcher(t, clk, Options{URL: ks.URL(), UnknownKidInterval: 30 * time.Second})

		storm := func() (suppressed, other int) {
			const workers, each = 2000, 5 // 10 000 requests; under the race detector's goroutine limit
			var mu sync.Mutex
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range workers {
				wg.Go(func() {
					<-start
					for range each {
						kid := fmt.Sprintf("random-%016x", rand.Uint64())
						err := f.RefreshUnknownKid(context.Background(), kid)
						mu.Lock()
						if errors.Is(err, ErrSuppressed) {
							suppressed++
						} else if err != nil {
							t.Errorf("RefreshUnknownKid() = %v, want nil or ErrSuppressed", err)
						} else {
							other++
						}
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			return suppressed, other
		}

		for round := 1; round <= 3; round++ {
			before := f.Stats()
			suppressed, other := storm()
			s := f.Stats()
			if got := s.Fetches - before.Fetches; got != 1 {
				t.Errorf("round %d: %d fetches, want exactly 1", round, got)
			}
			if got := s.UnknownKidRefreshes - before.UnknownKidRefreshes; got != 1 {
				t.Errorf("round %d: %d unknown-kid refreshes, want 1", round, got)
			}
			if got := s.SuppressedRefreshes - before.SuppressedRefreshes; got != uint64(suppressed) || suppressed+other != 10000 || other < 1 {
				t.Errorf("round %d: suppressed %d (counted %d), completed %d; want all 10000 accounted", round, suppressed, got, other)
			}
			clk.waitArmed(t)
			clk.Advance(30 * time.Second)
		}
		if got := ks.jwksHits.Load(); got != 4 {
			t.Errorf("server saw %d requests, want 4 (start-up + one per interval)", got)
		}
	})
}

// 100 concurrent requests for one new kid cause exactly one fetch.
func TestRefreshUnknownKidOneNewKid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		f, _ := startFetcher(t, clk, Options{URL: ks.URL()})
		ks.setBody(testkeys.JWKS(keyA, keyB))

		errs := make(chan error, 100)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				<-start
				errs <- f.RefreshUnknownKid(context.Background(), "b")
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("RefreshUnknownKid(b) = %v, want nil", err)
			}
		}
		s := f.Stats()
		if s.Fetches != 2 || s.UnknownKidRefreshes != 1 || s.SuppressedRefreshes != 0 || ks.jwksHits.Load() != 2 {
			t.Errorf("Stats() = %+v, hits %d; want exactly 1 fetch after start-up", s, ks.jwksHits.Load())
		}
	})
}

// A caller waits for a shared refresh only under its own context; the
// flight goes on for the others.
func TestRefreshUnknownKidCallerContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		f, _ := startFetcher(t, clk, Options{URL: ks.URL()})
		release := make(chan struct{})
		ks.set(func(ks *keyServer) { ks.block, ks.body = release, testkeys.JWKS(keyA, keyB) })

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := f.RefreshUnknownKid(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("RefreshUnknownKid(short ctx) = %v, want %v", err, context.DeadlineExceeded)
		}
		done := make(chan error, 1)
		go func() { done <- f.RefreshUnknownKid(context.Background(), "b") }()
		close(release)
		if err := <-done; err != nil {
			t.Errorf("RefreshUnknownKid(joined) = %v, want nil", err)
		}
		if _, ok := f.Keys().Load().Lookup("b"); !ok {
			t.Errorf("kid b missing after the shared refresh")
		}
		if s := f.Stats(); s.Fetches != 2 || s.UnknownKidRefreshes != 1 {
			t.Errorf("Stats() = %+v, want 2 fetches and 1 unknown-kid refresh", s)
		}
	})
}

// A kid proven absent is remembered; asking again within the interval costs
// nothing, and so does any other kid (the budget is spent).
func TestRefreshUnknownKidSuppressed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		f, _ := startFetcher(t, clk, Options{URL: ks.URL(), UnknownKidInterval: 10 * time.Second})

		if err := f.RefreshUnknownKid(context.Background(), "x"); err != nil {
			t.Fatalf("RefreshUnknownKid(x) = %v, want nil (refresh made)", err)
		}
		clk.waitArmed(t)
		if !f.Keys().RecentlyMissing("x", clk.Now()) {
			t.Errorf("RecentlyMissing(x) = false after a refresh without x")
		}
		clk.Advance(5 * time.Second)
		for _, kid := range []string{"x", "y"} {
			if err := f.RefreshUnknownKid(context.Background(), kid); !errors.Is(err, ErrSuppressed) {
				t.Errorf("RefreshUnknownKid(%s) = %v, want %v", kid, err, ErrSuppressed)
			}
		}
		if err := f.RefreshUnknownKid(context.Background(), "a"); err != nil {
			t.Errorf("RefreshUnknownKid(a) = %v, want nil for a kid the set holds", err)
		}
		if s := f.Stats(); s.Fetches != 2 || s.SuppressedRefreshes != 2 {
			t.Errorf("Stats() = %+v, want 2 fetches and 2 suppressed", s)
		}
		clk.Advance(5 * time.Second) // the interval has passed: x is forgotten, the budget is back
		if err := f.RefreshUnknownKid(context.Background(), "x"); err != nil {
			t.Errorf("RefreshUnknownKid(x) after the interval = %v, want nil", err)
		}
		if s := f.Stats(); s.Fetches != 3 || s.UnknownKidRefreshes != 2 {
			t.Errorf("Stats() = %+v, want 3 fetches and 2 unknown-kid refreshes", s)
		}
	})
}

// Kids come from tokens: an absurdly long one is not remembered as missing
// (the memory stays small); the budget still bounds what it costs.
func TestRefreshUnknownKidLongKid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		f, _ := startFetcher(t, clk, Options{URL: ks.URL()})
		long := strings.Repeat("k", maxRememberedKid+1)
		if err := f.RefreshUnknownKid(context.Background(), long); err != nil {
			t.Fatalf("RefreshUnknownKid(long) = %v, want nil", err)
		}
		if f.Keys().RecentlyMissing(long, clk.Now()) {
			t.Errorf("RecentlyMissing(long kid) = true, want false")
		}
		if err := f.RefreshUnknownKid(context.Background(), long); !errors.Is(err, ErrSuppressed) {
			t.Errorf("RefreshUnknownKid(long) again = %v, want %v", err, ErrSuppressed)
		}
	})
}

// An unknown-kid refresh that fails returns the error and moves the retry
// schedule to the backoff.
func TestRefreshUnknownKidFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		f, _ := startFetcher(t, clk, Options{URL: ks.URL()})
		ks.set(func(ks *keyServer) { ks.status = http.StatusBadGateway })
		if err := f.RefreshUnknownKid(context.Background(), "b"); !errors.Is(err, ErrStatus) {
			t.Fatalf("RefreshUnknownKid(b) = %v, want %v", err, ErrStatus)
		}
		if d := clk.waitArmed(t); d != time.Second {
			t.Errorf("after a failed refresh: next attempt in %v, want the 1s backoff", d)
		}
		if f.Keys().RecentlyMissing("b", clk.Now()) {
			t.Errorf("RecentlyMissing(b) = true after a failed fetch, want false (not proven absent)")
		}
	})
}

func TestDiscovery(t *testing.T) {
	entraIssuer := "https://login.microsoftonline.com/{tenantid}/v2.0"
	tests := []struct {
		name      string
		issuer    func(ks *keyServer) string
		discovery func(ks *keyServer) []byte
		wantErr   error
	}{
		{name: "ok", issuer: func(ks *keyServer) string { return ks.base }},
		{
			name:   "trailing-slash",
			issuer: func(ks *keyServer) string { return ks.base + "/" },
			discovery: func(ks *keyServer) []byte {
				return []byte(fmt.Sprintf(`{"issuer":%q,"jwks_uri":%q}`, ks.base+"/", ks.URL()))
			},
		},
		{
			name:   "issuer-mismatch",
			issuer: func(ks *keyServer) string { return ks.base },
			discovery: func(ks *keyServer) []byte {
				return []byte(fmt.Sprintf(`{"issuer":%q,"jwks_uri":%q}`, ks.base+"/", ks.URL()))
			},
			wantErr: ErrIssuerMismatch,
		},
		{
			name:   "issuer-case-matters",
			issuer: func(ks *keyServer) string { return ks.base },
			discovery: func(ks *keyServer) []byte {
				return []byte(fmt.Sprintf(`{"Issuer":%q,"jwks_uri":%q}`, ks.base, ks.URL()))
			},
			wantErr: ErrMalformed,
		},
		{
			name:   "jwks-uri-insecure",
			issuer: func(ks *keyServer) string { return ks.base },
			discovery: func(ks *keyServer) []byte {
				return []byte(fmt.Sprintf(`{"issuer":%q,"jwks_uri":"http://idp.example/keys"}`, ks.base))
			},
			wantErr: ErrInsecureURL,
		},
		{
			name:      "jwks-uri-missing",
			issuer:    func(ks *keyServer) string { return ks.base },
			discovery: func(ks *keyServer) []byte { return []byte(fmt.Sprintf(`{"issuer":%q}`, ks.base)) },
			wantErr:   ErrMalformed,
		},
		{
			name:      "not-json",
			issuer:    func(ks *keyServer) string { return ks.base },
			discovery: func(ks *keyServer) []byte { return []byte(`<html>`) },
			wantErr:   ErrMalformed,
		},
		{
			// Entra publishes a template issuer; configured as the same
			// string, the exact match holds.
			name:   "entra-template",
			issuer: func(ks *keyServer) string { return entraIssuer },
			discovery: func(ks *keyServer) []byte {
				return []byte(fmt.Sprintf(`{"issuer":%q,"jwks_uri":%q}`, entraIssuer, ks.URL()))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := newNetKeyServer(t, testkeys.JWKS(keyA))
			if tt.discovery != nil {
				ks.set(func(ks *keyServer) { ks.discovery = tt.discovery(ks) })
			}
			o := Options{Discovery: true, Issuer: tt.issuer(ks)}
			if tt.name == "entra-template" {
				o.Client = rewritingClient(t, ks.base)
			}
			set, err := Fetch(context.Background(), o)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Fetch() = %v, want %v", err, tt.wantErr)
			}
			if err == nil && set.Len() != 1 {
				t.Errorf("Fetch() = %d keys, want 1", set.Len())
			}
		})
	}
}

// The real Entra and Google discovery documents, served as published,
// lead to their real key sets.
func TestDiscoveryIdPDocuments(t *testing.T) {
	tests := []struct {
		name, issuer, discovery, jwks string
		wantKeys                      int
	}{
		{name: "entra", issuer: "https://login.microsoftonline.com/{tenantid}/v2.0",
			discovery: "entra-common.openid-configuration.json", jwks: "entra-common.jwks.json", wantKeys: 8},
		{name: "google", issuer: "https://accounts.google.com",
			discovery: "google.openid-configuration.json", jwks: "google.jwks.json", wantKeys: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := newNetKeyServer(t, readIdP(t, tt.jwks))
			ks.set(func(ks *keyServer) { ks.discovery = readIdP(t, tt.discovery) })
			set, err := Fetch(context.Background(), Options{Discovery: true, Issuer: tt.issuer, Client: rewritingClient(t, ks.base)})
			if err != nil || set.Len() != tt.wantKeys {
				t.Fatalf("Fetch() = %v keys, %v; want %d keys", set.Len(), err, tt.wantKeys)
			}
			if ks.discoveryHits.Load() != 1 || ks.jwksHits.Load() != 1 {
				t.Errorf("requests: %d discovery, %d jwks; want 1 each", ks.discoveryHits.Load(), ks.jwksHits.Load())
			}
		})
	}
}

// The fetcher keeps the discovered jwks_uri and discovers again after a
// failed JWKS fetch.
func TestFetcherRediscovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		f, d := startFetcher(t, clk, Options{Discovery: true, Issuer: ks.base})
		if st := f.Keys().Status(); st.Source != "discovery:"+ks.base || f.Keys().Load().Len() != 1 {
			t.Fatalf("Status() = %+v, want keys from discovery", st)
		}
		d = clk.step(t, d)
		if got := ks.discoveryHits.Load(); got != 1 {
			t.Errorf("after a periodic refresh: %d discovery requests, want 1 (jwks_uri kept)", got)
		}
		ks.set(func(ks *keyServer) { ks.status = http.StatusNotFound })
		d = clk.step(t, d)
		ks.set(func(ks *keyServer) { ks.status = 0 })
		clk.step(t, d)
		if got := ks.discoveryHits.Load(); got != 2 {
			t.Errorf("after a failed fetch: %d discovery requests, want 2", got)
		}
		if s := f.Stats(); s.Fetches != 6 || s.Errors != 1 {
			t.Errorf("Stats() = %+v, want 6 requests (2 discovery, 4 jwks) and 1 error", s)
		}
	})
}

func TestFetchRedirects(t *testing.T) {
	ks := newNetKeyServer(t, testkeys.JWKS(keyA))
	mux := http.NewServeMux()
	for i := 1; i <= 4; i++ {
		mux.Handle(fmt.Sprintf("/r%d", i), http.RedirectHandler(fmt.Sprintf("/r%d", i-1), http.StatusFound))
	}
	mux.Handle("/r0", http.RedirectHandler(ks.URL(), http.StatusFound))
	mux.Handle("/away", http.RedirectHandler("http://idp.example/keys", http.StatusFound))
	redirector := httptest.NewServer(mux)
	t.Cleanup(redirector.Close)

	tests := []struct {
		path    string
		wantErr error
	}{
		{path: "/r0"},
		{path: "/r2"}, // 3 redirects: the limit
		{path: "/r3", wantErr: ErrTooManyRedirects},
		{path: "/away", wantErr: ErrInsecureURL},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			_, err := Fetch(context.Background(), Options{URL: redirector.URL + tt.path})
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Fetch(%s) = %v, want %v", tt.path, err, tt.wantErr)
			}
		})
	}
}

func TestFetch(t *testing.T) {
	dir := t.TempDir()
	secret := base64.RawURLEncoding.EncodeToString(testkeys.Secret())
	octDoc := []byte(`{"keys":[{"kty":"oct","kid":"h","k":"` + secret + `"}]}`)
	file := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(file, octDoc, 0o600); err != nil {
		t.Fatal(err)
	}
	ks := newNetKeyServer(t, testkeys.JWKS(keyA, keyB))
	remoteOct := newNetKeyServer(t, octDoc)
	notFound := newNetKeyServer(t, nil)
	notFound.set(func(ks *keyServer) { ks.status = http.StatusNotFound })
	large := newNetKeyServer(t, testkeys.JWKS(keyA, keyB, keyC, keyA, keyB, keyC)) // over MinMaxBytes

	tests := []struct {
		name        string
		opts        Options
		wantKeys    int
		wantSkipped int
		wantLocal   bool
		wantErr     error
	}{
		{name: "url", opts: Options{URL: ks.URL()}, wantKeys: 2},
		{name: "file-with-secret", opts: Options{File: file}, wantKeys: 1, wantLocal: true},
		{name: "remote-secret-refused", opts: Options{URL: remoteOct.URL()}, wantSkipped: 1, wantErr: ErrNoKeys},
		{name: "too-large", opts: Options{URL: large.URL(), MaxBytes: MinMaxBytes}, wantErr: ErrTooLarge},
		{name: "status", opts: Options{URL: notFound.URL()}, wantErr: ErrStatus},
		{name: "missing-file", opts: Options{File: filepath.Join(dir, "nope.json")}, wantErr: os.ErrNotExist},
		{name: "directory", opts: Options{File: dir}, wantErr: ErrMalformed},
		{name: "invalid", opts: Options{}, wantErr: ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Fetch(context.Background(), tt.opts)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Fetch() = %v, want %v", err, tt.wantErr)
			}
			if set.Len() != tt.wantKeys || len(set.Skipped()) != tt.wantSkipped {
				t.Errorf("Fetch() = %d keys, %d skipped; want %d, %d", set.Len(), len(set.Skipped()), tt.wantKeys, tt.wantSkipped)
			}
			if set != nil && tt.wantLocal != set.UsableUntil.IsZero() {
				t.Errorf("Fetch() UsableUntil = %v, want zero only for a file", set.UsableUntil)
			}
			for _, k := range set.Keys() {
				if k.Local != tt.wantLocal {
					t.Errorf("key %q Local = %v, want %v", k.Kid, k.Local, tt.wantLocal)
				}
			}
		})
	}
}

// A key file is read at start and again when it changes; a bad file keeps
// the last good set; file keys never go stale.
func TestFetcherFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "keys.json")
		mtime := t0
		write := func(b []byte) {
			t.Helper()
			mtime = mtime.Add(time.Second)
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(file, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
		secret := base64.RawURLEncoding.EncodeToString(testkeys.Secret())
		write([]byte(`{"keys":[{"kty":"oct","kid":"h","k":"` + secret + `"}]}`))
		clk := newBubbleClock()
		f, d := startFetcher(t, clk, Options{File: file, FilePollInterval: 2 * time.Second})
		if d != 2*time.Second {
			t.Errorf("poll interval = %v, want 2s", d)
		}
		set := f.Keys().Load()
		if k, ok := set.Lookup("h"); !ok || !k.Local || k.Kty != "oct" || !set.UsableUntil.IsZero() {
			t.Fatalf("file set = %+v, want a local oct key that never goes stale", set)
		}
		if st := f.Keys().Status(); st.Source != "file:"+file {
			t.Errorf("Status().Source = %q, want %q", st.Source, "file:"+file)
		}

		clk.step(t, d) // unchanged: not read again
		if s := f.Stats(); s.Fetches != 1 {
			t.Errorf("Stats().Fetches = %d after an unchanged poll, want 1", s.Fetches)
		}

		write(testkeys.JWKS(keyA))
		clk.step(t, d)
		if _, ok := f.Keys().Load().Lookup("a"); !ok {
			t.Errorf("after a change: kid a missing")
		}

		good := f.Keys().Load()
		write([]byte(`{"keys":`))
		clk.step(t, d)
		clk.step(t, d) // unchanged bad file: not read again, still failing
		st := f.Keys().Status()
		if f.Keys().Load() != good || st.ConsecutiveFailures != 2 || !strings.Contains(st.LastError, ErrMalformed.Error()) {
			t.Errorf("bad file: Status() = %+v, want the last good set kept and 2 failures", st)
		}
		if s := f.Stats(); s.Fetches != 3 {
			t.Errorf("Stats().Fetches = %d, want 3 reads", s.Fetches)
		}

		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		clk.step(t, d)
		write(testkeys.JWKS(keyB))
		clk.step(t, d)
		if _, ok := f.Keys().Load().Lookup("b"); !ok || f.Keys().Status().ConsecutiveFailures != 0 {
			t.Errorf("after the file came back: kid b missing or failures %d", f.Keys().Status().ConsecutiveFailures)
		}
	})
}

// The last good JWKS is persisted and loaded at start, with the time it was
// fetched: a restart during an IdP outage still verifies, for StaleFor.
func TestFetcherStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	ks := newKeyServer(t, testkeys.JWKS(keyA, keyB))
	ks.set(func(ks *keyServer) { ks.etag = `"v1"` })
	o := Options{URL: ks.URL(), Issuer: "https://idp.example/", StateDir: dir, StaleFor: time.Hour}
	synctest.Test(t, func(t *testing.T) {
		f, _ := startFetcher(t, newBubbleClock(), o)
		f.Close()

		path := statePath(dir, o.Issuer, "")
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("state file: %v", err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("state file mode = %v, want 0600", fi.Mode().Perm())
		}
		var s stateFile
		b, _ := os.ReadFile(path)
		if err := json.Unmarshal(b, &s); err != nil || s.Issuer != o.Issuer || s.ETag != `"v1"` || !s.FetchedAt.Equal(t0) {
			t.Fatalf("state file = %s, %v; want issuer, etag and fetched_at", b, err)
		}
	})
	if t.Failed() {
		return
	}

	// Each restart below runs in a bubble of its own, 10 minutes after t0.
	t.Run("outage", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ks.set(func(ks *keyServer) { ks.status = http.StatusServiceUnavailable })
			clk := newBubbleClock()
			clk.Advance(10 * time.Minute)
			f, err := New(testOptions(clk, o))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			clk.f = f
			set := f.Keys().Load() // published by New, before any fetch
			if set.Len() != 2 || !set.FetchedAt.Equal(t0) || !set.UsableUntil.Equal(t0.Add(time.Hour)) {
				t.Fatalf("loaded set = %d keys, fetched %v, usable until %v; want 2, %v, %v", set.Len(), set.FetchedAt, set.UsableUntil, t0, t0.Add(time.Hour))
			}
			if err := f.Ready(context.Background()); err != nil {
				t.Errorf("Ready() = %v, want nil from the persisted set", err)
			}
			clk.waitArmed(t)
			if f.Keys().Load() != set || f.Keys().Status().ConsecutiveFailures != 1 {
				t.Errorf("after a failed fetch: the persisted set was replaced or the failure not reported")
			}
		})
	})
	t.Run("revalidated", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ks.set(func(ks *keyServer) { ks.status = 0 })
			clk := newBubbleClock()
			clk.Advance(10 * time.Minute)
			f, d := startFetcher(t, clk, o)
			// A file's validators are not sent (TestStateFileValidatorsDoNotRenewItsSet):
			// the first fetch gets the body, equal to the saved one, which
			// confirms the loaded set; the refreshes after it are conditional.
			if got := ks.requestHeader().Get("If-None-Match"); got != "" {
				t.Errorf("first request If-None-Match = %q, want none", got)
			}
			if set := f.Keys().Load(); set.Len() != 2 || !set.FetchedAt.Equal(clk.Now()) {
				t.Errorf("after the first fetch: %d keys, FetchedAt %v; want 2, %v", set.Len(), set.FetchedAt, clk.Now())
			}
			clk.step(t, d)
			if got := ks.requestHeader().Get("If-None-Match"); got != `"v1"` || f.Stats().NotModified != 1 {
				t.Errorf("second request If-None-Match = %q, NotModified %d; want the etag, 1", got, f.Stats().NotModified)
			}
		})
	})
	t.Run("other-source-ignored", func(t *testing.T) {
		other := newKeyServer(t, nil)
		other.set(func(ks *keyServer) { ks.status = http.StatusServiceUnavailable })
		o := o
		o.URL = other.URL()
		synctest.Test(t, func(t *testing.T) {
			f, _ := startFetcher(t, newBubbleClock(), o)
			if f.Keys().Load() != nil {
				t.Errorf("a state file of another source was loaded")
			}
		})
	})
}

func TestFetcherClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		release := make(chan struct{})
		defer close(release)
		ks.set(func(ks *keyServer) { ks.block = release }) // every fetch hangs until cancelled
		ignore := goleak.IgnoreCurrent()
		clk := newBubbleClock()
		f, err := New(testOptions(clk, Options{URL: ks.URL()}))
		if err != nil {
			t.Fatal(err)
		}
		joined := make(chan error, 1)
		go func() { joined <- f.RefreshUnknownKid(context.Background(), "b") }()

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		if err := f.Ready(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Ready() = %v, want %v", err, context.DeadlineExceeded)
		}
		if err := f.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
		if err := <-joined; err == nil {
			t.Errorf("RefreshUnknownKid() during Close = nil, want the cancelled fetch's error")
		}
		goleak.VerifyNone(t, ignore)
		if err := f.Close(); err != nil {
			t.Errorf("second Close() = %v", err)
		}
		if err := f.Ready(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("Ready() after Close = %v, want %v", err, ErrClosed)
		}
		if err := f.RefreshUnknownKid(context.Background(), "b"); !errors.Is(err, ErrClosed) {
			t.Errorf("RefreshUnknownKid() after Close = %v, want %v", err, ErrClosed)
		}
	})
}

// With the real clock, the fetcher fetches at once, arms a real timer and
// stops it on Close.
func TestFetcherRealClock(t *testing.T) {
	ks := newNetKeyServer(t, testkeys.JWKS(keyA))
	f, err := New(Options{URL: ks.URL(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.Ready(ctx); err != nil {
		t.Fatalf("Ready() = %v", err)
	}
	if st := f.Keys().Status(); time.Until(st.NextRefresh) < 13*time.Minute {
		t.Errorf("Status().NextRefresh = %v, want about 15m ahead", st.NextRefresh)
	}
}

// Logs report fetches and skipped keys without key material, and errors
// without the URL's query (user info is refused: TestCheckURLCredentials).
func TestFetcherLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		secret := base64.RawURLEncoding.EncodeToString(testkeys.Secret())
		var n map[string]any
		json.Unmarshal(testkeys.JWKJSON(keyA), &n)
		body := doc(json.RawMessage(`{"kty":"oct","kid":"h","k":"`+secret+`"}`), testkeys.JWKJSON(keyA),
			testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.RSA1024), Kid: "weak"}))
		ks := newKeyServer(t, body)
		var buf testlog.Buffer
		clk := newBubbleClock()
		u, _ := url.Parse(ks.URL())
		u.RawQuery = "api_key=hunter3"
		f, d := startFetcher(t, clk, Options{URL: u.String(), Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		ks.set(func(ks *keyServer) { ks.status = http.StatusInternalServerError })
		clk.step(t, d)

		logs := buf.String()
		for _, want := range []string{"jwks fetched", "jwks key skipped", `"kid":"weak"`, "jwks fetch failed", "500"} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs lack %q:\n%s", want, logs)
			}
		}
		for _, leak := range []string{secret[:16], n["n"].(string)[:16], "hunter3"} {
			if strings.Contains(logs, leak) || strings.Contains(f.Keys().Status().LastError, leak) || strings.Contains(f.Keys().Status().Source, leak) {
				t.Errorf("logs or status contain secret material %q", leak)
			}
		}
	})
}
