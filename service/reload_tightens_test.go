package service

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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
	return fillDoc(`state_dir: `+dir+`
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
    jwks_file: `+filepath.Join(dir, "ec.json")+`
policies:
  - {name: p, scopes: {any: [SCOPE]}, expression: 'EXPR', allow_anonymous: ANON, issuers: [POLISS]}
routes:
  - {path: /orders/**, policy: p}
`, v, set)
}

// fillDoc returns doc with each name of values replaced by its value, or
// by its value in set when set has one.
func fillDoc(doc string, values, set map[string]string) string {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		v := values[k]
		if x, ok := set[k]; ok {
			v = x
		}
		doc = strings.ReplaceAll(doc, k, v)
	}
	return doc
}

// tightenTokens returns two tokens tightenDoc's issuer a.example accepts:
// fresh, valid for an hour, and lately, expired 20s ago (within the leeway).
func tightenTokens() (fresh, lately string) {
	now := time.Now()
	claims := func(exp time.Time) map[string]any {
		return map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
			"iat": now.Unix(), "nbf": now.Unix(), "exp": exp.Unix()}
	}
	return mintRS256(claims(now.Add(time.Hour))), mintRS256(claims(now.Add(-20 * time.Second)))
}

// tightening is a row of the tightenDoc tests: a token, accepted under
// tightenDoc's defaults and sent before the reload and after it, and the
// values of the reloaded configuration.
type tightening struct {
	name  string
	token string // "" sends none; "?" and a token sends it in the query
	tight map[string]string
}

// verifierTightenings are the tightenings of what the verifier accepts
// (the issuer's settings and key source), each refusing one of the tokens
// of tightenTokens.
func verifierTightenings(fresh, lately string) []tightening {
	return []tightening{
		{"issuer-removed", fresh, map[string]string{"ISSUER": "https://c.example/", "POLISS": "https://b.example/, https://c.example/"}},
		{"audience-removed", fresh, map[string]string{"AUD": "other"}},
		{"algorithm-removed", fresh, map[string]string{"ALGS": "ES256"}},
		{"key-source-replaced", fresh, map[string]string{"JWKS": "ec.json"}},
		{"leeway-reduced", lately, map[string]string{"LEEWAY": "5s"}},
		{"max-lifetime-reduced", fresh, map[string]string{"MAXLIFE": "30m"}},
		{"claim-required", fresh, map[string]string{"REQ": "exp, jti"}},
		{"type-required", fresh, map[string]string{"TYPE": "at+jwt"}},
		{"token-size-reduced", fresh, map[string]string{"MAXTOK": "256"}},
	}
}

// tightenKeysDir is a new directory holding tightenDoc's key sets:
// jwks.json (testJWKS, a.example's) and ec.json (b.example's ES256 key).
func tightenKeysDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jwks.json"), testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	ec := testkeys.JWKS(testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "ec-a", Alg: "ES256", Use: "sig"})
	if err := os.WriteFile(filepath.Join(dir, "ec.json"), ec, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// reloadDoc reloads svc with the configuration doc (relative paths from
// dir) and fails the test when it does not parse or is refused.
func reloadDoc(t *testing.T, svc *Service, doc, dir string) {
	t.Helper()
	p, err := parsePlanEnv(doc, dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	mustReload(t, svc, ctx, p)
}

// TestReloadTightensTheNextRequest: a reload that tightens anything
// applies to the very next request after it returns, on every front end,
// however the request was answered (and cached) before it.
func TestReloadTightensTheNextRequest(t *testing.T) {
	fresh, lately := tightenTokens()
	tests := append(verifierTightenings(fresh, lately), []tightening{
		{"dpop-required", fresh, map[string]string{"DPOP": "required"}},
		{"scope-tightened", fresh, map[string]string{"SCOPE": "orders:write"}},
		{"expression-tightened", fresh, map[string]string{"EXPR": `claims.sub == "bob"`}},
		{"anonymous-made-authenticated", "", map[string]string{"ANON": "false"}},
		{"policy-issuers-tightened", fresh, map[string]string{"POLISS": "https://b.example/"}},
		{"query-source-removed", "?" + fresh, map[string]string{"SOURCES": `{header: Authorization, prefix: "Bearer "}`}},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tightenKeysDir(t)
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
			reloadDoc(t, d.svc, tightenDoc(dir, tt.tight), dir)
			for fe, v := range ask() {
				if v.allowed {
					t.Errorf("%s after the reload: allowed, want denied", fe)
				}
			}
		})
	}
}

// TestReloadTightensTheJSONAPI: a reload that tightens what the verifier
// accepts applies to the very next call of the JSON API (/v1/verify,
// /v1/verify/batch, /introspect), which share the token cache with the
// front ends, however the token was answered (and cached) before it.
func TestReloadTightensTheJSONAPI(t *testing.T) {
	fresh, lately := tightenTokens()
	const clients = "introspection: {clients: [{id: gateway, secret_env: GW_SECRET}]}\n"
	tests := verifierTightenings(fresh, lately)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tightenKeysDir(t)
			d := &diffService{svc: startPlan(t, tightenDoc(dir, nil)+clients, dir)}
			post := func(path, body string) string {
				r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				d.svc.Handler().ServeHTTP(w, r)
				return w.Body.String()
			}
			ask := func() map[string]bool {
				return map[string]bool{
					"verify":     strings.Contains(post("/v1/verify", tokenBody(tt.token)), `"valid":true`),
					"batch":      strings.Contains(post("/v1/verify/batch", `{"tokens":["`+tt.token+`"]}`), `"valid":true`),
					"introspect": d.introspect(t, tt.token),
				}
			}
			for range 2 { // twice: the cache filled
				for api, ok := range ask() {
					if !ok {
						t.Fatalf("%s before the reload: refused, want accepted", api)
					}
				}
			}
			reloadDoc(t, d.svc, tightenDoc(dir, tt.tight)+clients, dir)
			for api, ok := range ask() {
				if ok {
					t.Errorf("%s after the reload: accepted, want refused", api)
				}
			}
		})
	}
}
