package server

import (
	"bytes"
	"encoding/json"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/verify"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// Issuers of the test environment.
const (
	issuerA    = "https://idp.example.com/"
	issuerDown = "https://down.example.com/"
	audience   = "api://orders"
)

// epoch is the fixed instant of every test clock.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a settable test clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: epoch} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// mustKey builds a cache.Key from an embedded test key.
func mustKey(t testing.TB, name, kid string) *cache.Key {
	t.Helper()
	k, err := cache.NewKey(testkeys.Public(name), cache.KeyMeta{Kid: kid})
	if err != nil {
		t.Fatalf("cache.NewKey(%s) = %v", name, err)
	}
	return k
}

// keySet is the key set of issuerA: RSA, EC and Ed25519 keys, usable for
// 24h from epoch.
func keySet(t testing.TB, fetchedAt time.Time) *cache.Set {
	t.Helper()
	keys := []*cache.Key{
		mustKey(t, testkeys.RSA2048A, "rsa-a"),
		mustKey(t, testkeys.EC256A, "ec-a"),
		mustKey(t, testkeys.Ed25519A, "ed-a"),
	}
	return cache.NewSet(keys, nil, fetchedAt, fetchedAt.Add(24*time.Hour))
}

// env is a server over a real verifier with two issuers: issuerA (keys
// loaded) and issuerDown (no keys: keys_unavailable).
type env struct {
	clock   *clock
	keysA   *cache.Keys
	keysD   *cache.Keys
	v       *verify.Verifier
	srv     *Server
	reg     *prometheus.Registry
	logs    *testlog.Buffer
	handler http.Handler
}

type envConfig struct {
	tokenCache   int
	sources      []TokenSource
	noDown       bool // only issuerA
	emptyKeys    bool // issuerA starts without keys
	maxBatch     int
	maxBody      int64
	maxTokenSize int
}

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	e := &env{clock: newClock(), keysA: &cache.Keys{}, keysD: &cache.Keys{}, logs: &testlog.Buffer{}}
	if !cfg.emptyKeys {
		e.keysA.Store(keySet(t, epoch))
	}
	issuers := []verify.Issuer{{
		Issuer:        issuerA,
		Keys:          e.keysA,
		Audiences:     []string{audience},
		ExtractClaims: []string{"scope", "sub"},
	}}
	if !cfg.noDown {
		issuers = append(issuers, verify.Issuer{Issuer: issuerDown, Keys: e.keysD, Audiences: []string{audience}})
	}
	v, err := verify.New(verify.Options{
		Issuers:       issuers,
		Now:           e.clock.Now,
		TokenCache:    verify.TokenCacheOptions{MaxEntries: cfg.tokenCache},
		MaxTokenBytes: cfg.maxTokenSize,
	})
	if err != nil {
		t.Fatalf("verify.New() = %v", err)
	}
	e.v = v
	e.reg = prometheus.NewRegistry()
	e.srv, err = New(Options{
		Verifier:     v,
		TokenSources: cfg.sources,
		ClaimsToHeaders: map[string]map[string]string{
			issuerA: {"sub": "X-Auth-Subject", "scope": "x-auth-scope"},
		},
		StripAuthorization: true,
		IntrospectionClients: []IntrospectionClient{
			{ID: "gateway", Secret: "gateway-secret"},
			{ID: "other", Secret: "other-secret"},
		},
		MaxBatch:     cfg.maxBatch,
		MaxBodyBytes: cfg.maxBody,
		Registry:     e.reg,
		Logger:       slog.New(slog.NewJSONHandler(e.logs, nil)),
		Now:          e.clock.Now,
		Version:      "1.2.3-test",
	})
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	e.handler = e.srv.Handler()
	return e
}

// claims returns the claims of a valid issuerA token, with overrides (a nil
// value deletes a claim).
func claims(over map[string]any) map[string]any {
	c := map[string]any{
		"iss":   issuerA,
		"sub":   "alice",
		"aud":   audience,
		"iat":   epoch.Unix(),
		"nbf":   epoch.Unix(),
		"exp":   epoch.Add(time.Hour).Unix(),
		"jti":   "id-1",
		"scope": "orders:read orders:write",
		"big":   json.Number("123456789012345678901234567890"),
		"pi":    json.Number("3.14159265358979323846264338327950288"),
	}
	for k, v := range over {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

// mint signs claims with the RSA key of issuerA (kid rsa-a) under RS256,
// which is deterministic: golden bodies stay stable.
func mint(c map[string]any) string {
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a"}, c)
}

// tokens are the cases every token endpoint is tested with.
func tokens() map[string]string {
	return map[string]string{
		"valid":            mint(claims(nil)),
		"expired":          mint(claims(map[string]any{"exp": epoch.Add(-time.Hour).Unix()})),
		"wrong-audience":   mint(claims(map[string]any{"aud": "api://elsewhere"})),
		"bad-signature":    testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048B), map[string]any{"kid": "rsa-a"}, claims(nil)),
		"unknown-kid":      testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "nope"}, claims(nil)),
		"keys-unavailable": mint(claims(map[string]any{"iss": issuerDown})),
		"unknown-issuer":   mint(claims(map[string]any{"iss": "https://evil.example.net/"})),
	}
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

// checkGoldenJSON compares the JSON document doc (any formatting) with
// testdata/golden/name.json, or rewrites it with -update.
func checkGoldenJSON(t *testing.T, name string, doc []byte) {
	t.Helper()
	var compact, got bytes.Buffer
	if err := json.Compact(&compact, doc); err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	if err := json.Indent(&got, compact.Bytes(), "", "  "); err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	writeOrCompareGolden(t, name, got.Bytes())
}

// writeOrCompareGolden compares got with testdata/golden/name.json, or
// rewrites the file with -update.
func writeOrCompareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("response differs from %s (run go test -update to accept):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
