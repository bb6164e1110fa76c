package jwks

import (
	"cmp"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// fakeClock is an injected clock whose timers fire only when the test
// advances it. Every timer the fetcher arms is reported on armed, so a test
// knows the fetcher is idle and what it scheduled.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	armed  chan time.Duration
}

type fakeTimer struct {
	clk     *fakeClock
	c       chan time.Time
	at      time.Time
	stopped bool
	fired   bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: t0, armed: make(chan time.Duration, 1024)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	t := &fakeTimer{clk: c, c: make(chan time.Time, 1), at: c.now.Add(d)}
	if d <= 0 {
		t.fired = true
		t.c <- c.now
	} else {
		c.timers = append(c.timers, t)
	}
	c.mu.Unlock()
	c.armed <- d
	return t
}

// Advance moves the clock by d and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped || t.fired:
		case !t.at.After(c.now):
			t.fired = true
			t.c <- c.now
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

// waitArmed waits for the fetcher to arm its next timer and returns its
// duration: by then the previous attempt has been published.
func (c *fakeClock) waitArmed(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.armed:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("fetcher armed no timer")
		return 0
	}
}

// step fires the armed timer of duration d and waits for the next one.
func (c *fakeClock) step(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	c.Advance(d)
	return c.waitArmed(t)
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	active := !t.stopped && !t.fired
	t.stopped = true
	return active
}

// keyServer is an httptest JWKS (and discovery) server whose answers the
// test changes while the fetcher runs (go-oidc's keyServer).
type keyServer struct {
	srv *httptest.Server

	mu              sync.Mutex
	body            []byte
	header          http.Header // extra response headers
	status          int         // non-zero: answer this status, no body
	etag            string
	lastModified    string
	block           chan struct{} // non-nil: requests wait for it to close (or their end)
	discovery       []byte        // the discovery document; nil: issuer = URL, jwks_uri = URL/jwks
	discoveryStatus int           // non-zero: the discovery document is answered this status, no body
	lastRequest     http.Header

	jwksHits, discoveryHits atomic.Int64
}

func newKeyServer(t *testing.T, body []byte) *keyServer {
	t.Helper()
	ks := &keyServer{body: body, header: http.Header{}}
	ks.srv = httptest.NewServer(ks)
	t.Cleanup(ks.srv.Close)
	return ks
}

func (ks *keyServer) URL() string { return ks.srv.URL + "/jwks" }

func (ks *keyServer) set(fn func(ks *keyServer)) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	fn(ks)
}

func (ks *keyServer) setBody(b []byte) { ks.set(func(ks *keyServer) { ks.body = b }) }

func (ks *keyServer) requestHeader() http.Header {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.lastRequest
}

func (ks *keyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ks.mu.Lock()
	block := ks.block
	ks.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-r.Context().Done():
			return
		}
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.lastRequest = r.Header.Clone()
	if strings.HasSuffix(r.URL.Path, wellKnownOIDC) {
		ks.discoveryHits.Add(1)
		if ks.discoveryStatus != 0 {
			w.WriteHeader(ks.discoveryStatus)
			return
		}
		doc := ks.discovery
		if doc == nil {
			doc, _ = json.Marshal(map[string]string{"issuer": ks.srv.URL, "jwks_uri": ks.URL()})
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
		return
	}
	ks.jwksHits.Add(1)
	for k, v := range ks.header {
		w.Header()[k] = v
	}
	if ks.status != 0 {
		w.WriteHeader(ks.status)
		return
	}
	if ks.etag != "" {
		w.Header().Set("ETag", ks.etag)
	}
	if ks.lastModified != "" {
		w.Header().Set("Last-Modified", ks.lastModified)
	}
	if (ks.etag != "" && r.Header.Get("If-None-Match") == ks.etag) ||
		(ks.lastModified != "" && r.Header.Get("If-Modified-Since") == ks.lastModified) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Write(ks.body)
}

// testOptions returns options with the fake clock, fixed jitter (none) and a
// silent logger.
func testOptions(clk *fakeClock, o Options) Options {
	o.Now, o.NewTimer = clk.Now, clk.NewTimer
	if o.Jitter == nil {
		o.Jitter = func() float64 { return 0.5 } // ±0%
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.UnknownKidWait == 0 {
		// The fake clock does not move while a caller waits, and the wait
		// runs on a real timer: let the flight's own bound (FetchTimeout)
		// end it, as it did before waits were bounded. The tests of the
		// wait run under testing/synctest with the real clock.
		o.UnknownKidWait = cmp.Or(o.FetchTimeout, DefaultFetchTimeout)
	}
	return o
}

// startFetcher starts a fetcher and waits until its first attempt is
// published; it returns the interval it scheduled.
func startFetcher(t *testing.T, clk *fakeClock, o Options) (*Fetcher, time.Duration) {
	t.Helper()
	f, err := New(testOptions(clk, o))
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f, clk.waitArmed(t)
}

// Test keys and documents.
var (
	keyA = testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A), Kid: "a", Alg: "RS256", Use: "sig"}
	keyB = testkeys.JWK{Key: testkeys.Public(testkeys.EC256A), Kid: "b", Alg: "ES256", Use: "sig"}
	keyC = testkeys.JWK{Key: testkeys.Public(testkeys.Ed25519A), Kid: "c", Alg: "EdDSA"}
)

// jwkWith returns k as a JWK object with members changed (a nil value
// deletes the member).
func jwkWith(k testkeys.JWK, members map[string]any) json.RawMessage {
	var m map[string]any
	if err := json.Unmarshal(testkeys.JWKJSON(k), &m); err != nil {
		panic(err)
	}
	for name, v := range members {
		if v == nil {
			delete(m, name)
			continue
		}
		m[name] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// doc builds a JWKS from raw key objects.
func doc(keys ...json.RawMessage) []byte {
	if keys == nil {
		keys = []json.RawMessage{}
	}
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		panic(err)
	}
	return b
}

func readIdP(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/idp-jwks/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rewriteTransport sends every request to target, whatever its URL says: it
// lets a test serve real IdP documents, which name https://<idp> URLs.
type rewriteTransport struct {
	target *url.URL
	base   *http.Transport
}

func (rt rewriteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = rt.target.Scheme, rt.target.Host
	return rt.base.RoundTrip(r)
}

func rewritingClient(t *testing.T, target string) *http.Client {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: rewriteTransport{target: u, base: base}}
}
