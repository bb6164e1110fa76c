package jwks

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is when every test bubble starts: testing/synctest's clock begins at
// midnight UTC, 2000-01-01.
var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// bubbleClock steps the fetcher's schedule inside a testing/synctest bubble:
// the fetcher waits on time's own timers, which the bubble's clock fires
// when every goroutine of the bubble is blocked. Every method must be
// called inside the bubble (synctest.Test).
type bubbleClock struct {
	f *Fetcher // the fetcher started last by startFetcher, whose schedule it reads
}

func newBubbleClock() *bubbleClock { return &bubbleClock{} }

// Now returns the bubble's time.
func (c *bubbleClock) Now() time.Time { return time.Now() }

// Advance lets d pass and waits until the fetchers have done what came due
// (each due timer fired, its attempt published, the next one armed).
func (c *bubbleClock) Advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// waitArmed waits until the fetcher is idle and returns the time until its
// next attempt: by then the previous attempt has been published.
func (c *bubbleClock) waitArmed(t *testing.T) time.Duration {
	t.Helper()
	synctest.Wait()
	if c.f == nil {
		t.Fatal("waitArmed: no fetcher was started on this clock")
	}
	// An attempt blocked on its source (a hanging IdP) is durably blocked
	// too: while the schedule says the attempt is due, let the bubble's
	// time run on (its FetchTimeout ends it) until the next one is armed.
	deadline := time.Now().Add(time.Hour)
	for {
		next := c.f.Keys().Status().NextRefresh
		if next.IsZero() {
			t.Fatal("the fetcher scheduled no attempt")
		}
		if next.After(time.Now()) {
			return time.Until(next)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attempt due at %v did not end within an hour", next)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
	}
}

// step lets d pass (the next attempt's time) and returns the time until the
// attempt after it.
func (c *bubbleClock) step(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	c.Advance(d)
	return c.waitArmed(t)
}

// memHosts routes the in-memory HTTP of the tests: a keyServer's host to
// the keyServer. A bubble can do no network I/O (a goroutine blocked on a
// socket is not durably blocked), so the fetchers of these tests reach
// their servers through memClient.
var (
	memHosts sync.Map // string -> http.Handler
	memSeq   atomic.Int64
)

// memClient is the fetchers' HTTP client: it serves each request with the
// handler of its host in memHosts, in the calling goroutine.
var memClient = &http.Client{Transport: memTransport{}}

type memTransport struct{}

func (memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h, ok := memHosts.Load(r.URL.Host)
	if !ok {
		return nil, fmt.Errorf("no test server at %s", r.URL.Host)
	}
	if r.Body != nil {
		defer r.Body.Close()
	}
	rec := httptest.NewRecorder()
	h.(http.Handler).ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err // the handler gave up with the request
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// serveInMemory registers h at a new host and returns its base URL
// (https://serverN.test), removed at the end of the test.
func serveInMemory(t *testing.T, h http.Handler) string {
	t.Helper()
	host := fmt.Sprintf("server%d.test", memSeq.Add(1))
	memHosts.Store(host, h)
	t.Cleanup(func() { memHosts.Delete(host) })
	return "https://" + host
}

// keyServer is an in-memory JWKS (and discovery) server whose answers the
// test changes while the fetcher runs (go-oidc's keyServer). Fetchers reach
// it through memClient.
type keyServer struct {
	base string // https://serverN.test

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
	ks.base = serveInMemory(t, ks)
	return ks
}

// newNetKeyServer is a keyServer on a loopback listener, for the tests
// that run on the real clock and exercise the fetcher's own HTTP client
// (redirects, TLS, Fetch without a Client).
func newNetKeyServer(t *testing.T, body []byte) *keyServer {
	t.Helper()
	ks := &keyServer{body: body, header: http.Header{}}
	srv := httptest.NewServer(ks)
	t.Cleanup(srv.Close)
	ks.base = srv.URL
	return ks
}

func (ks *keyServer) URL() string { return ks.base + "/jwks" }

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
			doc, _ = json.Marshal(map[string]string{"issuer": ks.base, "jwks_uri": ks.URL()})
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

// testOptions returns options with the in-memory client (unless one is
// set), fixed jitter (none) and a silent logger. The fetcher's clock is the
// bubble's.
func testOptions(clk *bubbleClock, o Options) Options {
	if o.Client == nil {
		o.Client = memClient
	}
	if o.Jitter == nil {
		o.Jitter = func() float64 { return 0.5 } // ±0%
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.UnknownKidWait == 0 {
		// Let the flight's own bound (FetchTimeout) end a caller's wait, as
		// it did before waits were bounded: these tests are about what a
		// refresh does, those of the wait are in unknownkid_test.go.
		o.UnknownKidWait = cmp.Or(o.FetchTimeout, DefaultFetchTimeout)
	}
	return o
}

// startFetcher starts a fetcher and waits until its first attempt is
// published; it returns the interval it scheduled. clk reads this
// fetcher's schedule from then on. Call it inside a synctest bubble.
func startFetcher(t *testing.T, clk *bubbleClock, o Options) (*Fetcher, time.Duration) {
	t.Helper()
	f, err := New(testOptions(clk, o))
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	t.Cleanup(func() { f.Close() })
	clk.f = f
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
