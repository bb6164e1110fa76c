package server

import (
	"bytes"
	"encoding/json"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// The fixtures of server/internal/servertest, under this package's names.
const (
	issuerA    = servertest.IssuerA
	issuerDown = servertest.IssuerDown
	audience   = servertest.Audience
)

var epoch = servertest.Epoch

func newClock() *servertest.Clock { return servertest.NewClock() }
func mustKey(t testing.TB, name, kid string) *cache.Key {
	t.Helper()
	return servertest.Key(t, name, kid)
}
func keySet(t testing.TB, fetchedAt time.Time) *cache.Set {
	t.Helper()
	return servertest.KeySet(t, fetchedAt)
}
func claims(over map[string]any) map[string]any { return servertest.Claims(over) }
func mint(c map[string]any) string              { return servertest.Mint(c) }
func tokens() map[string]string                 { return servertest.Tokens() }
func writeOrCompareGolden(t *testing.T, name string, b []byte) {
	t.Helper()
	servertest.Golden(t, goldenDir, name, b, *update)
}

const goldenDir = "testdata/golden"

// env is a server over the verifier of servertest.NewEnv, with a recording
// Metrics and a stub /metrics handler.
type env struct {
	clock   *servertest.Clock
	keysA   *cache.Keys
	keysD   *cache.Keys
	v       *verify.Verifier
	srv     *Server
	metrics *recordedMetrics
	logs    *testlog.Buffer
	handler http.Handler
	// revocations is the store of envConfig.revocations; nil without.
	revocations *revoke.Memory
}

type envConfig struct {
	tokenCache   int
	sources      []TokenSource
	noDown       bool // only issuerA
	emptyKeys    bool // issuerA starts without keys
	maxBatch     int
	maxBody      int64
	maxTokenSize int
	proxy        request.Proxy
	apiAuth      bool
	sharedCache  bool
	tracer       trace.Tracer // the server's and the verifier's
	// revocations configures a memory revocation store in a temporary
	// directory (env.revocations), on the env's clock.
	revocations bool
	noAudiences bool // issuerA without audiences (servertest.Config.NoAudiences)
}

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	var index []string
	if cfg.revocations {
		index = RevocationClaims() // as config plans it with revocation
	}
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: cfg.tokenCache, NoDown: cfg.noDown, EmptyKeys: cfg.emptyKeys, MaxTokenSize: cfg.maxTokenSize,
		SharedCache: cfg.sharedCache, Tracer: cfg.tracer, IndexClaims: index, NoAudiences: cfg.noAudiences})
	e := &env{clock: ve.Clock, keysA: ve.KeysA, keysD: ve.KeysD, v: ve.V, logs: ve.Logs, metrics: &recordedMetrics{}}
	var revs Revocations
	if cfg.revocations {
		m, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: 24 * time.Hour, Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		e.revocations, revs = m, m
	}
	var err error
	e.srv, err = New(Options{
		Revocations:        revs,
		Verifier:           ve.V,
		TokenSources:       cfg.sources,
		ClaimsToHeaders:    servertest.ClaimsToHeaders(),
		StripAuthorization: true,
		IntrospectionClients: []IntrospectionClient{
			{ID: "gateway", Secret: "gateway-secret-value"},
			{ID: "other", Secret: "other-secret-value"},
		},
		MaxBatch:       cfg.maxBatch,
		MaxBodyBytes:   cfg.maxBody,
		Metrics:        e.metrics,
		MetricsHandler: stubMetricsHandler,
		Logger:         slog.New(slog.NewJSONHandler(e.logs, nil)),
		Now:            e.clock.Now,
		Version:        "1.2.3-test",
		Proxy:          cfg.proxy,
		APIAuth:        cfg.apiAuth,
		Tracer:         cfg.tracer,
	})
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	e.handler = e.srv.Handler()
	return e
}

// stubMetricsHandler stands for server/metrics' handler on /metrics.
var stubMetricsHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	_, _ = w.Write([]byte("# metrics\n"))
})

// recordedMetrics is a Metrics that counts each decision by endpoint,
// issuer label and class. It is safe for concurrent use.
type recordedMetrics struct {
	mu     sync.Mutex
	counts map[[3]string]int
}

func (m *recordedMetrics) Decided(endpoint, issuer, class string, elapsed time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[[3]string]int{}
	}
	m.counts[[3]string{endpoint, issuer, class}]++
}

func (m *recordedMetrics) ClientAuthFailed(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[[3]string]int{}
	}
	m.counts[[3]string{"client_auth", reason, ""}]++
}

// count returns how many decisions were recorded with these labels.
func (m *recordedMetrics) count(endpoint, issuer, class string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[[3]string{endpoint, issuer, class}]
}

// total returns how many decisions were recorded.
func (m *recordedMetrics) total() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.counts {
		n += c
	}
	return n
}

// do sends a request to the handler and returns the recorded response.
func do(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func postJSON(path, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// golden is the stored form of a response.
type golden struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// checkGolden compares the response with testdata/golden/name.json, or
// rewrites it with -update. Bodies that are not JSON are stored as strings.
func checkGolden(t *testing.T, name string, w *httptest.ResponseRecorder) {
	t.Helper()
	g := golden{Status: w.Code, Headers: map[string]string{}}
	keys := make([]string, 0, len(w.Header()))
	for k := range w.Header() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g.Headers[k] = strings.Join(w.Header()[k], " | ")
	}
	body := w.Body.Bytes()
	switch {
	case len(body) == 0:
		g.Body = json.RawMessage(`""`)
	case json.Valid(body):
		g.Body = bytes.TrimSpace(body)
	default:
		g.Body = json.RawMessage(jsonString(string(body)))
	}
	got, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatalf("MarshalIndent() = %v", err)
	}
	writeOrCompareGolden(t, name, got)
}

// envoyRemoves is the list of header names an answer's
// X-Envoy-Auth-Headers-To-Remove tells Envoy to remove, read as Envoy's
// ext_authz HTTP client reads it: every value split on commas, trimmed,
// empty names dropped.
func envoyRemoves(h http.Header) []string {
	var names []string
	for _, v := range h.Values("X-Envoy-Auth-Headers-To-Remove") {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	return names
}
