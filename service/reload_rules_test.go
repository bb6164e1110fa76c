package service

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

// rulesDoc is the configuration of TestReloadAppliesRoutesAndHeaders with
// the values of set replaced.
func rulesDoc(dir string, set map[string]string) string {
	v := map[string]string{
		"MTLS": "off", "ROUTES": "- {path: /orders/**, policy: p}", "DEFAULT": `""`,
		"ISSHDR": "{sub: X-Auth-Subject}", "POLHDR": "", "CLAIMS": "[]",
	}
	for k, x := range set {
		v[k] = x
	}
	polhdr := ""
	if v["POLHDR"] != "" {
		polhdr = ", claims_to_headers: " + v["POLHDR"]
	}
	doc := `state_dir: ` + dir + `
forward_auth: {proxy: envoy}
mtls: {client_cert_header: X-Client-Cert}
issuers:
  - issuer: https://a.example/
    jwks_file: ` + filepath.Join(dir, "jwks.json") + `
    audiences: [orders]
    claims_to_headers: ` + v["ISSHDR"] + `
    sender_constraint: {mtls: ` + v["MTLS"] + `}
policies:
  - {name: p, scopes: {any: [orders:read]}, claims: ` + v["CLAIMS"] + polhdr + `}
  - {name: deny, expression: 'claims.sub == "nobody"'}
routes:
  ` + v["ROUTES"] + `
default_policy: ` + v["DEFAULT"] + `
`
	return doc
}

// TestReloadAppliesRoutesAndHeaders: a reload that changes the routes (a
// narrower route added before a broader one, a default policy set), a
// policy's claim matchers, an issuer's mtls binding, or which headers carry
// the claims applies to the very next request on every front end, however
// the token was answered (and cached) before it.
func TestReloadAppliesRoutesAndHeaders(t *testing.T) {
	now := time.Now()
	tok := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	tests := []struct {
		name  string
		path  string
		loose map[string]string
		tight map[string]string
		// wantHeaders, when set, is checked instead of a denial: the
		// allowed answer after the reload carries exactly these identity
		// headers (name: value; "" absent).
		wantHeaders map[string]string
	}{
		{name: "route-inserted-before", path: "/orders/secret/1",
			tight: map[string]string{"ROUTES": "- {path: /orders/secret/**, policy: deny}\n  - {path: /orders/**, policy: p}"}},
		{name: "default-policy-set", path: "/other",
			tight: map[string]string{"DEFAULT": "deny"}},
		{name: "claim-matcher-added", path: "/orders/1",
			tight: map[string]string{"CLAIMS": "[{claim: sub, equals: bob}]"}},
		{name: "mtls-required", path: "/orders/1",
			tight: map[string]string{"MTLS": "required"}},
		{name: "issuer-header-renamed", path: "/orders/1",
			tight:       map[string]string{"ISSHDR": "{sub: X-User}"},
			wantHeaders: map[string]string{"X-Auth-Subject": "", "X-User": "alice"}},
		{name: "issuer-header-removed", path: "/orders/1",
			tight:       map[string]string{"ISSHDR": "{}"},
			wantHeaders: map[string]string{"X-Auth-Subject": ""}},
		{name: "policy-headers-override", path: "/orders/1",
			tight:       map[string]string{"POLHDR": "{scope: X-Scope}"},
			wantHeaders: map[string]string{"X-Auth-Subject": "", "X-Scope": "orders:read"}},
		{name: "policy-headers-dropped", path: "/orders/1",
			loose:       map[string]string{"POLHDR": "{scope: X-Scope}"},
			wantHeaders: map[string]string{"X-Auth-Subject": "alice", "X-Scope": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "jwks.json"), testJWKS(), 0o600); err != nil {
				t.Fatal(err)
			}
			d := &diffService{svc: startPlan(t, rulesDoc(dir, tt.loose), dir)}
			d.grpc = grpcClient(t, d.svc)
			rq := diffRequest{method: "GET", path: tt.path, headers: map[string]string{"Authorization": "Bearer " + tok}}
			ask := func() (map[string]verdict, map[string]http.Header) {
				fa, fah := forwardAuthHeaders(d, rq)
				gv, gh := grpcHeaders(t, d, rq)
				return map[string]verdict{
						"forward-auth": fa, "grpc": gv,
						"middleware": serveOriginal(d.svc.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), rq),
					}, map[string]http.Header{
						"forward-auth": fah, "grpc": gh,
					}
			}
			for range 2 { // twice: caches filled
				vs, _ := ask()
				for fe, v := range vs {
					if !v.allowed {
						t.Fatalf("%s before the reload: %+v, want allowed", fe, v)
					}
				}
			}
			p, err := parsePlanEnv(rulesDoc(dir, tt.tight), dir)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			mustReload(t, d.svc, ctx, p)
			vs, hs := ask()
			for fe, v := range vs {
				switch {
				case tt.wantHeaders == nil && v.allowed:
					t.Errorf("%s after the reload: allowed, want denied", fe)
				case tt.wantHeaders != nil && !v.allowed:
					t.Errorf("%s after the reload: %+v, want allowed", fe, v)
				}
			}
			if tt.wantHeaders == nil {
				return
			}
			for fe, h := range hs {
				for name, want := range tt.wantHeaders {
					if got := h.Get(name); got != want {
						t.Errorf("%s after the reload: header %s = %q, want %q", fe, name, got, want)
					}
				}
			}
		})
	}
}

// forwardAuthHeaders asks /v1/authz (envoy preset) about rq and returns
// its verdict and answer headers.
func forwardAuthHeaders(d *diffService, rq diffRequest) (verdict, http.Header) {
	r := httptest.NewRequest(rq.method, "/v1/authz"+rq.path, nil)
	r.Host = "api.example"
	for k, v := range rq.headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	d.svc.Handler().ServeHTTP(w, r)
	return verdict{w.Code == 200, challengeClass(w.Code, w.Header().Get("WWW-Authenticate"))}, w.Header()
}

// grpcHeaders asks gRPC Check about rq and returns its verdict and, when
// allowed, the headers the OK response adds upstream.
func grpcHeaders(t *testing.T, d *diffService, rq diffRequest) (verdict, http.Header) {
	t.Helper()
	v := d.check(t, rq)
	h := http.Header{}
	if !v.allowed {
		return v, h
	}
	hs := map[string]string{}
	for k, x := range rq.headers {
		hs[strings.ToLower(k)] = x
	}
	resp, err := d.grpc.Check(context.Background(), &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: rq.method, Scheme: "https", Host: "api.example", Path: rq.path, Headers: hs,
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range resp.GetOkResponse().GetHeaders() {
		if o.GetHeader().GetValue() != "" {
			h.Add(o.GetHeader().GetKey(), o.GetHeader().GetValue())
		}
	}
	return v, h
}
