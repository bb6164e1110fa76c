package service

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// tightenDoc is the configuration of TestReloadTightensTheNextRequest with
// the values of set replaced.
func tightenDoc(dir string, set map[string]string) string {
	v := map[string]string{
		"ISSUER": "https://a.example/", "JWKS": filepath.Join(dir, "jwks.json"), "AUD": "orders",
		"ALGS": "RS256, ES256", "LEEWAY": "60s", "MAXLIFE": "2h", "REQ": "exp", "TYPE": `""`, "DPOP": "off",
		"SCOPE": "orders:read", "EXPR": `claims.sub != "mallory"`, "ANON": "false",
		"POLISS": "https://a.example/, https://b.example/", "SOURCES": `{header: Authorization, prefix: "Bearer "}, {query: access_token}`,
		"MAXTOK": "16384",
	}
	for k, x := range set {
		v[k] = x
	}
	doc := `state_dir: ` + dir + `
forward_auth: {proxy: envoy}
limits: {max_token_bytes: MAXTOK}
token_sources: [SOURCES]
issuers:
  - issuer: ISSUER
    jwks_file: JWKS
    audiences: [AUD]
    algorithms: [ALGS]
    leeway: LEEWAY
    max_lifetime: MAXLIFE
    required_claims: [REQ]
    type: TYPE
    sender_constraint: {dpop: DPOP}
  - issuer: https://b.example/
    jwks_file: ` + filepath.Join(dir, "ec.json") + `
policies:
  - {name: p, scopes: {any: [SCOPE]}, expression: 'EXPR', allow_anonymous: ANON, issuers: [POLISS]}
routes:
  - {path: /orders/**, policy: p}
`
	for _, k := range []string{"ISSUER", "JWKS", "AUD", "ALGS", "LEEWAY", "MAXLIFE", "REQ", "TYPE", "DPOP", "SCOPE", "EXPR", "ANON", "POLISS", "SOURCES", "MAXTOK"} {
		doc = strings.ReplaceAll(doc, k, v[k])
	}
	return doc
}

// TestReloadTightensTheNextRequest: a reload that tightens anything
// applies to the very next request after it returns, on every front end,
// however the request was answered (and cached) before it.
func TestReloadTightensTheNextRequest(t *testing.T) {
	now := time.Now()
	claims := func(mod func(map[string]any)) map[string]any {
		c := map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	fresh := mintRS256(claims(nil))
	lately := mintRS256(claims(func(c map[string]any) { c["exp"] = now.Add(-20 * time.Second).Unix() }))
	tests := []struct {
		name  string
		token string // "" sends none
		tight map[string]string
	}{
		{"issuer-removed", fresh, map[string]string{"ISSUER": "https://c.example/", "POLISS": "https://b.example/, https://c.example/"}},
		{"audience-removed", fresh, map[string]string{"AUD": "other"}},
		{"algorithm-removed", fresh, map[string]string{"ALGS": "ES256"}},
		{"key-source-replaced", fresh, map[string]string{"JWKS": "ec.json"}},
		{"leeway-reduced", lately, map[string]string{"LEEWAY": "5s"}},
		{"max-lifetime-reduced", fresh, map[string]string{"MAXLIFE": "30m"}},
		{"claim-required", fresh, map[string]string{"REQ": "exp, jti"}},
		{"type-required", fresh, map[string]string{"TYPE": "at+jwt"}},
		{"dpop-required", fresh, map[string]string{"DPOP": "required"}},
		{"scope-tightened", fresh, map[string]string{"SCOPE": "orders:write"}},
		{"expression-tightened", fresh, map[string]string{"EXPR": `claims.sub == "bob"`}},
		{"anonymous-made-authenticated", "", map[string]string{"ANON": "false"}},
		{"policy-issuers-tightened", fresh, map[string]string{"POLISS": "https://b.example/"}},
		{"token-size-reduced", fresh, map[string]string{"MAXTOK": "256"}},
		{"query-source-removed", "?" + fresh, map[string]string{"SOURCES": `{header: Authorization, prefix: "Bearer "}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "jwks.json"), testJWKS(), 0o600); err != nil {
				t.Fatal(err)
			}
			ec := testkeys.JWKS(testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "ec-a", Alg: "ES256", Use: "sig"})
			if err := os.WriteFile(filepath.Join(dir, "ec.json"), ec, 0o600); err != nil {
				t.Fatal(err)
			}
			loose := map[string]string{"ANON": "true"}
			if tt.token != "" {
				loose = nil
			}
			d := &diffService{svc: startPlan(t, tightenDoc(dir, loose), dir)}
			d.grpc = grpcClient(t, d.svc)
			rq := diffRequest{method: "GET", path: "/orders/1", headers: map[string]string{}}
			switch {
			case strings.HasPrefix(tt.token, "?"):
				rq.path += "?access_token=" + tt.token[1:]
			case tt.token != "":
				rq.headers["Authorization"] = "Bearer " + tt.token
			}
			ask := func() map[string]verdict {
				return map[string]verdict{
					"forward-auth": d.authz(t, "envoy", rq), "grpc": d.check(t, rq),
					"middleware": serveOriginal(d.svc.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), rq),
				}
			}
			for fe, v := range ask() { // twice: caches filled
				if !v.allowed {
					t.Fatalf("%s before the reload: %+v, want allowed", fe, v)
				}
			}
			ask()
			p, err := parsePlanEnv(tightenDoc(dir, tt.tight), dir)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			mustReload(t, d.svc, ctx, p)
			for fe, v := range ask() {
				if v.allowed {
					t.Errorf("%s after the reload: allowed, want denied", fe)
				}
			}
		})
	}
}
