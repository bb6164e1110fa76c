package extauthz

import (
	"flag"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/server/metrics"
	"github.com/jwksverify/jwksverify/verify"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite the golden files in ../testdata/golden")

// goldenDir is server's: docs/API.md's examples are tested there.
const goldenDir = "../testdata/golden"

const issuerA = servertest.IssuerA

var epoch = servertest.Epoch

func claims(over map[string]any) map[string]any { return servertest.Claims(over) }
func mint(c map[string]any) string              { return servertest.Mint(c) }
func tokens() map[string]string                 { return servertest.Tokens() }

// env is a server (with Prometheus metrics) over the verifier of
// servertest.NewEnv.
type env struct {
	clock *servertest.Clock
	keysA *cache.Keys
	v     *verify.Verifier
	srv   *server.Server
	reg   *prometheus.Registry
	logs  *testlog.Buffer
}

type envConfig struct {
	tokenCache int
	sources    []server.TokenSource
	noDown     bool
	emptyKeys  bool
	quiet      bool // log nowhere (benchmarks)
}

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: cfg.tokenCache, NoDown: cfg.noDown, EmptyKeys: cfg.emptyKeys})
	e := &env{clock: ve.Clock, keysA: ve.KeysA, v: ve.V, logs: ve.Logs, reg: prometheus.NewRegistry()}
	m, err := metrics.New(metrics.Options{Verifier: ve.V, Registry: e.reg, Now: e.clock.Now})
	if err != nil {
		t.Fatalf("metrics.New() = %v", err)
	}
	logger := slog.New(slog.NewJSONHandler(e.logs, nil))
	if cfg.quiet {
		logger = slog.New(slog.DiscardHandler)
	}
	e.srv, err = server.New(server.Options{
		Verifier:           ve.V,
		TokenSources:       cfg.sources,
		ClaimsToHeaders:    servertest.ClaimsToHeaders(),
		StripAuthorization: true,
		Metrics:            m,
		MetricsHandler:     m.Handler(),
		Logger:             logger,
		Now:                e.clock.Now,
		// gRPC reads attributes.request.http whatever the preset: nginx's
		// headers are never consulted here.
		Proxy: request.Nginx,
	})
	if err != nil {
		t.Fatalf("server.New() = %v", err)
	}
	return e
}

func keySet(t testing.TB) *cache.Set { t.Helper(); return servertest.KeySet(t, epoch) }

func checkGoldenJSON(t *testing.T, name string, doc []byte) {
	t.Helper()
	servertest.GoldenJSON(t, goldenDir, name, doc, *update)
}
