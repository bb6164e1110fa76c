package metrics

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const apiDoc = "../../docs/API.md"

// env is a server with these metrics over the verifier of
// servertest.NewEnv.
type env struct {
	*servertest.Env
	reg     *prometheus.Registry
	m       *Metrics
	srv     *server.Server
	handler http.Handler
}

type envConfig struct{ tokenCache int }

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	e := &env{Env: servertest.NewEnv(t, servertest.Config{TokenCache: cfg.tokenCache}), reg: prometheus.NewRegistry()}
	var err error
	if e.m, err = New(Options{Verifier: e.V, Registry: e.reg, Now: e.Clock.Now, Version: "v1.2.3", Revision: "abc123"}); err != nil {
		t.Fatalf("New() = %v", err)
	}
	e.srv, err = server.New(server.Options{
		Verifier:       e.V,
		Metrics:        e.m,
		MetricsHandler: e.m.Handler(),
		Logger:         slog.New(slog.DiscardHandler),
		Now:            e.Clock.Now,
	})
	if err != nil {
		t.Fatalf("server.New() = %v", err)
	}
	e.handler = e.srv.Handler()
	return e
}

func do(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func get(h http.Handler, path string) *httptest.ResponseRecorder {
	return do(h, httptest.NewRequest(http.MethodGet, path, nil))
}

func verifyRequest(token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/verify", strings.NewReader(`{"token":"`+token+`"}`))
	r.Header.Set("Content-Type", "application/json")
	return r
}

func authzRequest(token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// metricsTraffic gives a token-caching env fetch counters, 90s of key age
// and a few decided tokens, then scrapes /metrics. docs/API.md shows lines
// of this scrape.
func metricsTraffic(t *testing.T) *httptest.ResponseRecorder {
	t.Helper()
	e := newEnv(t, envConfig{tokenCache: 100})
	toks := servertest.Tokens()
	servertest.AddStats(e.KeysA, cache.FetchStats{Fetches: 7, NotModified: 3, Errors: 2, KeysSkipped: 1, UnknownKidRefreshes: 1, SuppressedRefreshes: 4, NegativeKidHits: 5})
	e.Clock.Add(90 * time.Second)
	for _, n := range []string{"valid", "valid", "expired", "unknown-issuer", "keys-unavailable"} {
		do(e.handler, verifyRequest(toks[n]))
	}
	do(e.handler, authzRequest(toks["valid"]))
	do(e.handler, authzRequest(""))
	return get(e.handler, "/metrics")
}

func TestMetrics(t *testing.T) {
	w := metricsTraffic(t)
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200", w.Code)
	}
	body := w.Body.String()
	for _, line := range []string{
		`jwksverify_verify_total{class="valid",issuer="https://idp.example.com/"} 3`,
		`jwksverify_verify_total{class="expired",issuer="https://idp.example.com/"} 1`,
		`jwksverify_verify_total{class="unknown_issuer",issuer="unknown"} 1`,
		`jwksverify_verify_total{class="missing_token",issuer="unknown"} 1`,
		`jwksverify_verify_total{class="keys_unavailable",issuer="https://down.example.com/"} 1`,
		`jwksverify_verify_duration_seconds_count{endpoint="verify"} 5`,
		`jwksverify_verify_duration_seconds_count{endpoint="authz"} 2`,
		`jwksverify_jwks_fetches_total{issuer="https://idp.example.com/"} 7`,
		`jwksverify_jwks_not_modified_total{issuer="https://idp.example.com/"} 3`,
		`jwksverify_jwks_fetch_errors_total{issuer="https://idp.example.com/"} 2`,
		`jwksverify_jwks_keys_skipped_total{issuer="https://idp.example.com/"} 1`,
		`jwksverify_jwks_unknown_kid_refreshes_total{issuer="https://idp.example.com/"} 1`,
		`jwksverify_jwks_unknown_kid_refreshes_suppressed_total{issuer="https://idp.example.com/"} 4`,
		`jwksverify_jwks_negative_kid_hits_total{issuer="https://idp.example.com/"} 5`,
		`jwksverify_jwks_keys{issuer="https://idp.example.com/"} 3`,
		`jwksverify_jwks_keys{issuer="https://down.example.com/"} 0`,
		`jwksverify_jwks_age_seconds{issuer="https://idp.example.com/"} 90`,
		`jwksverify_issuer_ready{issuer="https://idp.example.com/"} 1`,
		`jwksverify_issuer_ready{issuer="https://down.example.com/"} 0`,
		`jwksverify_token_cache_hits_total 2`,
		`jwksverify_token_cache_misses_total`,
		`jwksverify_token_cache_entries 1`,
		`jwksverify_crypto_cross_checks_total{result="agree"} 1`,
		`jwksverify_crypto_cross_checks_total{result="mismatch"} 0`,
		`jwksverify_build_info{go="` + runtime.Version() + `",revision="abc123",version="v1.2.3"} 1`,
	} {
		if !strings.Contains(body, line+"\n") && !strings.Contains(body, line+" ") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if strings.Contains(body, "evil.example.net") {
		t.Errorf("/metrics carries the raw iss of an unknown token")
	}
}

func TestMetricsDefaultRegistry(t *testing.T) {
	e := newEnv(t, envConfig{})
	m, err := New(Options{Verifier: e.V})
	if err != nil {
		t.Fatal(err)
	}
	w := get(m.Handler(), "/metrics")
	if b := w.Body.String(); w.Code != http.StatusOK || !strings.Contains(b, "go_goroutines") || !strings.Contains(b, "jwksverify_issuer_ready") {
		t.Errorf("/metrics = %d, want Go and jwksverify metrics", w.Code)
	}
	if _, err := New(Options{Verifier: e.V, Registry: e.reg}); err == nil {
		t.Errorf("New() on a registry that already holds the metrics = nil, want an error")
	}
	if _, err := New(Options{}); err == nil {
		t.Errorf("New() without a verifier = nil, want an error")
	}
}

// TestDecidedIgnoresUnboundedLabels: a label outside the bounded sets is
// not recorded (no child is created for it).
func TestDecidedIgnoresUnboundedLabels(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.m.Decided("nope", "https://evil.example.net/", "valid", time.Millisecond)
	e.m.Decided(server.EndpointAuthz, servertest.IssuerA, "no_such_class", time.Millisecond)
	body := get(e.handler, "/metrics").Body.String()
	for _, bad := range []string{"evil.example.net", "no_such_class", `endpoint="nope"`} {
		if strings.Contains(body, bad) {
			t.Errorf("/metrics has a child for %s", bad)
		}
	}
	if !strings.Contains(body, `jwksverify_verify_duration_seconds_count{endpoint="authz"} 1`) {
		t.Errorf("/metrics lacks the authz latency of the known endpoint")
	}
}

// TestAPIDocMetrics checks that each metric family of the registry (gathered
// after New) has a table row with its type and labels, that the standard
// families are mentioned, and that the sample scrape in the doc is a real
// one.
func TestAPIDocMetrics(t *testing.T) {
	doc := servertest.APIDoc(t, apiDoc)
	e := newEnv(t, envConfig{tokenCache: 100})
	own := gatherNames(t, e.reg)
	all := gatherNames(t, defaultRegistry(t)) // as jwksverify serve has it

	n := 0
	for name, mf := range own {
		if !strings.HasPrefix(name, namespace+"_") {
			continue
		}
		n++
		row := servertest.TableRow(doc, "`"+name+"`")
		if row == "" {
			t.Errorf("docs/API.md has no table row for the metric `%s`", name)
			continue
		}
		if typ := strings.ToLower(mf.GetType().String()); !strings.Contains(row, "| "+typ+" |") {
			t.Errorf("metric %s: row %q does not give its type %s", name, row, typ)
		}
		for _, l := range labelNames(mf) {
			if !strings.Contains(row, "`"+l+"`") {
				t.Errorf("metric %s: row %q does not name its label `%s`", name, row, l)
			}
		}
	}
	if n < 19 {
		t.Errorf("found %d jwksverify metrics, want all of them (at least 19)", n)
	}
	for name := range all {
		prefix, _, _ := strings.Cut(name, "_")
		switch {
		case strings.HasPrefix(name, namespace+"_"):
		case prefix == "go" || prefix == "process":
			if !strings.Contains(doc, "`"+prefix+"_*`") {
				t.Errorf("docs/API.md does not mention `%s_*` (%s)", prefix, name)
			}
		default:
			if !strings.Contains(doc, "`"+name+"`") {
				t.Errorf("docs/API.md does not mention the metric `%s`", name)
			}
		}
	}

	sample := fencedAfter(t, doc, "<!-- metrics-sample -->")
	scrape := metricsTraffic(t).Body.String()
	lines := 0
	for line := range strings.Lines(sample) {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		lines++
		if !strings.Contains("\n"+scrape, "\n"+line+"\n") {
			t.Errorf("the sample scrape in docs/API.md has a line /metrics does not serve: %s", line)
		}
	}
	if lines < 5 {
		t.Errorf("the sample scrape has %d lines, want a real excerpt", lines)
	}
}

func gatherNames(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func labelNames(mf *dto.MetricFamily) []string {
	var out []string
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if !slices.Contains(out, lp.GetName()) {
				out = append(out, lp.GetName())
			}
		}
	}
	return out
}

// fencedAfter returns the content of the first fenced block after marker.
func fencedAfter(t *testing.T, doc, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, marker)
	if !ok {
		t.Fatalf("docs/API.md has no %s", marker)
	}
	m := regexp.MustCompile("(?s)^\\s*```[a-z]*\n(.*?)```").FindStringSubmatch(rest)
	if m == nil {
		t.Fatalf("docs/API.md: no fenced block right after %s", marker)
	}
	return m[1]
}

// defaultRegistry returns the registry New builds when Options.Registry is
// nil: with the Go and process collectors.
func defaultRegistry(t *testing.T) prometheus.Gatherer {
	t.Helper()
	m, err := New(Options{Verifier: newEnv(t, envConfig{}).V})
	if err != nil {
		t.Fatal(err)
	}
	return m.reg
}
