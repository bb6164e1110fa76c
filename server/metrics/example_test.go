package metrics_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/server/metrics"
	"github.com/jwksverify/jwksverify/verify"
)

// New registers jwksverify's metrics (decisions, key sets, the token cache,
// the build) on a registry and serves them; server.Options.Metrics records
// into them. An embedder passes its own registry to export them beside its
// own metrics.
func ExampleNew() {
	var keys cache.Keys // a jwks.Fetcher's in a service
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: "https://idp.example.com/", Keys: &keys}}})
	if err != nil {
		panic(err)
	}
	m, err := metrics.New(metrics.Options{
		Verifier: v,
		Registry: prometheus.NewRegistry(),
		Version:  "v1.2.3", Revision: "0123abc",
	})
	if err != nil {
		panic(err)
	}
	m.Decided("authz", "https://idp.example.com/", "expired", 120*time.Microsecond)

	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	for line := range strings.Lines(string(body)) {
		// Every issuer × class series exists from the start, at 0.
		if strings.HasPrefix(line, "jwksverify_verify_total{") && !strings.HasSuffix(line, " 0\n") {
			fmt.Print(line)
		}
	}
	// Output: jwksverify_verify_total{class="expired",issuer="https://idp.example.com/"} 1
}
