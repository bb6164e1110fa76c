package service

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// TestReloadRefusesOpaqueTokensAtOnce: a reload that removes an issuer's
// introspection, moves it to another authorization server, or tightens
// what the issuer accepts refuses an opaque token that was allowed (and
// whose answer is cached) from the very next request on every front end.
func TestReloadRefusesOpaqueTokensAtOnce(t *testing.T) {
	jwksSrv := jwksServer(t)
	const iss = "https://as.example/"
	active := newIntrospectionServer(t, iss)
	inactive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"active":false}`)
	}))
	t.Cleanup(inactive.Close)
	doc := func(intro, extra string) string {
		return fmt.Sprintf(`forward_auth: {proxy: envoy}
token_cache: {max_entries: 100}
issuers:
  - issuer: %s
    jwks_url: %s
%s%s
policies:
  - {name: p, expression: 'claims.sub == "alice"'}
routes:
  - {path: /orders/**, policy: p}
`, iss, jwksSrv.URL, intro, extra)
	}
	on := fmt.Sprintf("    introspection: {url: %q}\n", active.URL)
	tests := []struct {
		name string
		next string
	}{
		{"introspection-removed", doc("", "")},
		{"introspection-moved", doc(fmt.Sprintf("    introspection: {url: %q}\n", inactive.URL), "")},
		{"audience-required", doc(on, "    audiences: [orders]")},
		{"claim-required", doc(on, "    required_claims: [exp, jti]")},
		{"lifetime-bounded", doc(on, "    max_lifetime: 1m")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			first := writePlan(t, path, doc(on, ""))
			d := &diffService{svc: startLive(t, first)}
			d.grpc = grpcClient(t, d.svc)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := d.svc.Ready(ctx); err != nil {
				t.Fatal(err)
			}
			rq := diffRequest{method: "GET", path: "/orders/1", headers: map[string]string{"Authorization": "Bearer opaque-" + tt.name}}
			ask := func() map[string]verdict {
				return map[string]verdict{
					"forward-auth": d.authz(t, "envoy", rq), "grpc": d.check(t, rq),
					"middleware": serveOriginal(d.svc.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), rq),
				}
			}
			for range 2 {
				for fe, v := range ask() {
					if !v.allowed {
						t.Fatalf("%s before the reload: %+v, want allowed", fe, v)
					}
				}
			}
			mustReload(t, d.svc, ctx, writePlan(t, path, tt.next))
			for fe, v := range ask() {
				if v.allowed {
					t.Errorf("%s after the reload: allowed, want denied", fe)
				}
			}
		})
	}
}
