package jwks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// A 304 that names another ETag than the one asked about does not confirm
// the set held (RFC 9111 §4.3.4: a cache MUST NOT use it to update a stored
// response whose validator differs). The IdP removed key b (a compromised
// key) and changed its ETag from v1 to v2; one 304 answered to
// If-None-Match "v1" with ETag "v2" (a lagging edge, a broken cache) must
// not make the fetcher take "v2" as the ETag of the {a, b} it holds: every
// later, correct, conditional request would then be answered 304 and b
// would keep verifying for good, its staleness extended at every refresh.
func TestNotModifiedOtherETagDoesNotPinTheSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		body, etag := testkeys.JWKS(keyA, keyB), `"v1"`
		glitch := false // the next conditional request is answered 304 with the current ETag
		var fetches, notModified int
		base := serveInMemory(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			fetches++
			w.Header().Set("ETag", etag)
			inm := r.Header.Get("If-None-Match")
			if inm != "" && (inm == etag || glitch) {
				glitch = false
				notModified++
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("Content-Type", "application/jwk-set+json")
			w.Write(body)
		}))
		clk := newBubbleClock()
		f, d := startFetcher(t, clk, Options{URL: base + "/jwks", MinInterval: 10 * time.Second, DefaultTTL: time.Minute, StaleFor: time.Hour})
		if _, ok := f.Keys().Load().Lookup("b"); !ok {
			t.Fatal("kid b missing after the first fetch")
		}
		mu.Lock()
		body, etag, glitch = testkeys.JWKS(keyA), `"v2"`, true // b removed; one bad 304
		mu.Unlock()
		for range 10 { // ten refreshes, ten minutes
			d = clk.step(t, d)
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := f.Keys().Load().Lookup("b"); ok {
			t.Errorf("after %v and %d fetches (%d answered 304), removed kid b still verifies; set fetched at %v, usable until %v",
				clk.Now().Sub(t0), fetches, notModified, f.Keys().Load().FetchedAt, f.Keys().Load().UsableUntil)
		}
	})
}

// misbehavingIdP answers each request with answer(n) (n counts from 1),
// recording when each arrived; a nil response hangs until the request ends.
type misbehavingIdP struct {
	mu     sync.Mutex
	at     []time.Time
	answer func(n int) *http.Response
}

func (m *misbehavingIdP) RoundTrip(r *http.Request) (*http.Response, error) {
	m.mu.Lock()
	m.at = append(m.at, time.Now())
	resp := m.answer(len(m.at))
	m.mu.Unlock()
	if resp == nil {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	resp.Request = r
	return resp, nil
}

func (m *misbehavingIdP) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.at)
}

func jwksResponse(status int, h http.Header, body []byte) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/jwk-set+json")
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
}

// A flood of random kids, one every 50ms for 10 minutes, against an IdP that
// misbehaves after its first answer costs at most one fetch per
// UnknownKidInterval beyond what the same IdP costs without the flood, and
// no request waits longer than UnknownKidWait.
func TestFloodAgainstMisbehavingIdP(t *testing.T) {
	good := testkeys.JWKS(keyA)
	modes := map[string]func(n int) *http.Response{
		"hang":      func(int) *http.Response { return nil },
		"500":       func(int) *http.Response { return jwksResponse(500, nil, nil) },
		"429-retry": func(int) *http.Response { return jwksResponse(429, http.Header{"Retry-After": {"3600"}}, nil) },
		"empty":     func(int) *http.Response { return jwksResponse(200, nil, []byte(`{"keys":[]}`)) },
		"max-age-0": func(int) *http.Response { return jwksResponse(200, http.Header{"Cache-Control": {"max-age=0"}}, good) },
		"expires-old": func(int) *http.Response {
			return jwksResponse(200, http.Header{"Expires": {"Thu, 01 Jan 1970 00:00:00 GMT"}}, good)
		},
		"alternate": func(n int) *http.Response {
			if n%2 == 0 {
				return jwksResponse(200, http.Header{"Etag": {`"x"`}}, testkeys.JWKS(keyA, keyB))
			}
			return jwksResponse(200, http.Header{"Etag": {`"y"`}}, good)
		},
	}
	const span = 10 * time.Minute
	run := func(t *testing.T, mode func(int) *http.Response, flood bool) (fetches int, longest time.Duration) {
		synctest.Test(t, func(t *testing.T) {
			idp := &misbehavingIdP{answer: func(n int) *http.Response {
				if n == 1 {
					return jwksResponse(200, nil, good)
				}
				return mode(n)
			}}
			f := readyFetcher(t, idp, 10*time.Second, 5*time.Minute)
			start := time.Now()
			if flood {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for i := range int(span / (50 * time.Millisecond)) {
					wg.Go(func() {
						time.Sleep(time.Duration(i) * 50 * time.Millisecond)
						t0 := time.Now()
						_ = f.RefreshUnknownKid(context.Background(), fmt.Sprintf("rnd-%d", i))
						mu.Lock()
						longest = max(longest, time.Since(t0))
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			time.Sleep(span - time.Since(start))
			fetches = idp.count() - 1
			if testing.Verbose() {
				idp.mu.Lock()
				var gaps []string
				for i := 1; i < len(idp.at) && i < 40; i++ {
					gaps = append(gaps, idp.at[i].Sub(start).String())
				}
				idp.mu.Unlock()
				t.Logf("fetch times: %v", gaps)
			}
		})
		return
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			base, _ := run(t, mode, false)
			got, longest := run(t, mode, true)
			budget := int(span/DefaultUnknownKidInterval) + 1
			t.Logf("%s: %d fetches without the flood, %d with it (budget +%d), longest wait %v", name, base, got, budget, longest)
			if got > base+budget {
				t.Errorf("%s: the flood cost %d fetches over the %d of the same IdP without it; budget %d per %v",
					name, got-base, base, budget, span)
			}
			if longest > DefaultUnknownKidWait {
				t.Errorf("%s: a request waited %v, more than %v", name, longest, DefaultUnknownKidWait)
			}
		})
	}
}

// Readiness (a usable set) ends exactly StaleFor after the last success
// while the IdP answers 200 with nothing usable (an empty set, all keys
// skipped, a 304 naming another ETag), and comes back with the first good
// answer.
func TestUsableEndsAtStaleForWhateverTheIdPAnswers(t *testing.T) {
	weak := testkeys.JWKS(testkeys.JWK{Key: testkeys.Public(testkeys.RSA1024), Kid: "weak"})
	modes := map[string]func(n int) *http.Response{
		"empty": func(int) *http.Response {
			return jwksResponse(200, http.Header{"Cache-Control": {"max-age=31536000"}}, []byte(`{"keys":[]}`))
		},
		"all-skipped": func(int) *http.Response { return jwksResponse(200, nil, weak) },
		"304-other":   func(int) *http.Response { return jwksResponse(304, http.Header{"Etag": {`"other"`}}, nil) },
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				healthy := true
				idp := &misbehavingIdP{answer: func(n int) *http.Response {
					mu.Lock()
					defer mu.Unlock()
					if healthy {
						return jwksResponse(200, http.Header{"Etag": {`"v1"`}}, testkeys.JWKS(keyA))
					}
					return mode(n)
				}}
				const staleFor = 2 * time.Minute
				f := readyFetcher(t, idp, 30*time.Second, staleFor)
				mu.Lock()
				healthy = false
				mu.Unlock()
				last := f.Keys().Load().FetchedAt
				for range 3 * 60 * 4 { // 3 minutes in steps of 250ms
					time.Sleep(250 * time.Millisecond)
					synctest.Wait()
					now := time.Now()
					if got, want := f.Keys().Load().Usable(now), !now.After(last.Add(staleFor)); got != want {
						t.Fatalf("at +%v (last success +%v): Usable = %v, want %v", now.Sub(t0), last.Sub(t0), got, want)
					}
				}
				mu.Lock()
				healthy = true
				mu.Unlock()
				time.Sleep(15 * time.Second)
				synctest.Wait()
				if !f.Keys().Load().Usable(time.Now()) {
					t.Errorf("15s after the IdP recovered the set is still unusable (fetches %d)", idp.count())
				}
			})
		})
	}
}

// readyFetcher starts a fetcher of https://idp.example/jwks over idp
// (min_interval 10s, the given default TTL and stale_for, jitter fixed),
// waits for its first keys inside the bubble, and closes it at the test's
// end.
func readyFetcher(t *testing.T, idp http.RoundTripper, ttl, staleFor time.Duration) *Fetcher {
	t.Helper()
	f, err := New(Options{URL: "https://idp.example/jwks", Client: &http.Client{Transport: idp},
		MinInterval: 10 * time.Second, DefaultTTL: ttl, StaleFor: staleFor,
		Jitter: func() float64 { return 0.5 }, Logger: slog.New(slog.DiscardHandler)})
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
