package service

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server"
)

// diffService is one service of the differential: a proxy preset over the
// same issuer, policies, routes and revocations.
type diffService struct {
	svc  *Service
	grpc authv3.AuthorizationClient
}

func newDiffService(t *testing.T, proxy string) *diffService {
	t.Helper()
	dir := t.TempDir()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := `state_dir: ` + dir + `
revocation: {retention: 2h}
forward_auth: {proxy: ` + proxy + `}
limits: {max_token_bytes: 2048}
introspection: {clients: [{id: gateway, secret_env: GW_SECRET}]}
issuers:
  - issuer: https://a.example/
    jwks_file: ` + jwksFile + `
    audiences: [orders]
    leeway: 5s
    sender_constraint: {dpop: optional}
token_sources: [{header: Authorization, prefix: "Bearer "}, {query: access_token}]
policies:
  - {name: orders-read, scopes: {any: [orders:read]}, expression: 'claims.sub != "mallory"'}
routes:
  - {path: /orders/**, policy: orders-read}
`
	s := startPlan(t, doc, dir)
	gc := grpcClient(t, s)
	return &diffService{svc: s, grpc: gc}
}

// startPlan starts the service of the configuration doc (relative paths
// from dir) and waits until it is ready; the test closes it.
func startPlan(t *testing.T, doc, dir string) *Service {
	t.Helper()
	p, err := parsePlanEnv(doc, dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(p, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func parsePlanEnv(doc, dir string) (*config.Plan, error) {
	return config.Parse([]byte(doc), dir, config.Overrides{}, func(k string) (string, bool) {
		if k == "GW_SECRET" {
			return "gateway-secret-value", true
		}
		return "", false
	})
}

// verdict is what one entrypoint answered: allowed, and the class word.
type verdict struct {
	allowed bool
	class   string
}

// diffRequest is the original request: GET https://api.example<path> with
// the token as a bearer header (or in extra headers).
type diffRequest struct {
	method, path string
	headers      map[string]string
}

func (d *diffService) authz(t *testing.T, proxy string, rq diffRequest) verdict {
	t.Helper()
	var r *http.Request
	switch proxy {
	case "nginx":
		r = httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
		r.Header.Set("X-Original-Method", rq.method)
		r.Header.Set("X-Original-Uri", rq.path)
		r.Header.Set("X-Original-Host", "api.example")
		r.Header.Set("X-Original-Proto", "https")
	case "traefik", "caddy":
		r = httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
		r.Header.Set("X-Forwarded-Method", rq.method)
		r.Header.Set("X-Forwarded-Uri", rq.path)
		r.Header.Set("X-Forwarded-Host", "api.example")
		r.Header.Set("X-Forwarded-Proto", "https")
	case "envoy":
		r = httptest.NewRequest(rq.method, "/v1/authz"+rq.path, nil)
		r.Host = "api.example"
	}
	for k, v := range rq.headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	d.svc.Handler().ServeHTTP(w, r)
	return verdict{w.Code == 200, challengeClass(w.Code, w.Header().Get("WWW-Authenticate"))}
}

func challengeClass(code int, ch string) string {
	switch {
	case code == 200:
		return "valid"
	case code == 403:
		return "forbidden"
	case code == 503:
		return "keys_unavailable"
	case strings.Contains(ch, "error_description=\""):
		c := ch[strings.Index(ch, "error_description=\"")+len("error_description=\""):]
		return c[:strings.IndexByte(c, '"')]
	case code == 401:
		return "missing_token"
	}
	return "status" + http.StatusText(code)
}

func (d *diffService) check(t *testing.T, rq diffRequest) verdict {
	t.Helper()
	hs := map[string]string{}
	for k, v := range rq.headers {
		hs[strings.ToLower(k)] = v
	}
	resp, err := d.grpc.Check(context.Background(), &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: rq.method, Scheme: "https", Host: "api.example", Path: rq.path, Headers: hs,
		}},
		Source: &authv3.AttributeContext_Peer{Address: &corev3.Address{}},
	}})
	if err != nil {
		return verdict{false, "grpc:" + err.Error()}
	}
	if resp.GetOkResponse() != nil {
		return verdict{true, "valid"}
	}
	den := resp.GetDeniedResponse()
	var ch string
	for _, h := range den.GetHeaders() {
		if strings.EqualFold(h.GetHeader().GetKey(), "WWW-Authenticate") {
			ch = h.GetHeader().GetValue()
		}
	}
	return verdict{false, challengeClass(int(den.GetStatus().GetCode()), ch)}
}

// verifyJSON is /v1/verify with the routes' policy named and the request.
func (d *diffService) verifyJSON(t *testing.T, tok string, rq diffRequest) verdict {
	t.Helper()
	body := `{"token":` + jsonQuote(tok) + `,"policy":"orders-read","request":{"method":` + jsonQuote(rq.method) +
		`,"scheme":"https","host":"api.example","path":` + jsonQuote(rq.path) + `}}`
	r := httptest.NewRequest(http.MethodPost, "/v1/verify", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	d.svc.Handler().ServeHTTP(w, r)
	var v struct {
		Valid   bool   `json:"valid"`
		Allowed *bool  `json:"allowed"`
		Error   string `json:"error"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &v)
	if w.Code == 413 {
		return verdict{false, v.Error}
	}
	ok := v.Valid && (v.Allowed == nil || *v.Allowed)
	if ok {
		return verdict{true, "valid"}
	}
	return verdict{false, v.Error}
}

func (d *diffService) introspect(t *testing.T, tok string) bool {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/introspect", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.SetBasicAuth("gateway", "gateway-secret-value")
	w := httptest.NewRecorder()
	d.svc.Handler().ServeHTTP(w, r)
	return strings.Contains(w.Body.String(), `"active":true`)
}

// middleware is server.Middleware over the service's verifier, protecting
// a handler at the original path: the way a program that embeds the
// service protects its own handlers in-process.
func (d *diffService) middleware(t *testing.T, rq diffRequest) verdict {
	t.Helper()
	protect, err := server.Middleware(d.svc.Server().Verifier(), server.MiddlewareOptions{Logger: slog.New(slog.DiscardHandler),
		Revocations: d.svc.Revocations()})
	if err != nil {
		t.Fatal(err)
	}
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	return serveOriginal(h, rq)
}

// serviceMiddleware is Service.Middleware protecting a handler at the
// original path: the whole pipeline, policies and sender constraints
// included, on the request itself.
func (d *diffService) serviceMiddleware(t *testing.T, rq diffRequest) verdict {
	t.Helper()
	h := d.svc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := server.ResultFromContext(r.Context()); !ok {
			t.Error("Service.Middleware: allowed without a result in the context")
		}
	}))
	return serveOriginal(h, rq)
}

// serveOriginal sends the original request rq, over TLS, to h, an
// application handler behind a middleware.
func serveOriginal(h http.Handler, rq diffRequest) verdict {
	r := httptest.NewRequest(rq.method, "https://api.example"+rq.path, nil)
	for k, v := range rq.headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return verdict{w.Code == 200, challengeClass(w.Code, w.Header().Get("WWW-Authenticate"))}
}

func jsonQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestEntrypointDifferential: one configuration (an issuer, a routed
// policy with a scope and a CEL rule, a revocation entry), one table of
// tokens and requests, and every entrypoint of the one pipeline: each
// reaches the same verdict and class. Service.Middleware, the whole
// pipeline on the request itself, takes every row.
func TestEntrypointDifferential(t *testing.T) {
	const iss = "https://a.example/"
	now := time.Now()
	claims := func(over map[string]any) map[string]any {
		c := map[string]any{"iss": iss, "aud": "orders", "sub": "alice", "scope": "orders:read", "jti": "j-ok",
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		for k, v := range over {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	orders := func(tok string) diffRequest { return diffRequest{"GET", "/orders/1", bearer(tok)} }
	tests := []struct {
		name string
		tok  string
		rq   diffRequest
		want verdict
		// skip lists the entrypoints the row does not apply to: a policy
		// row to Middleware and /introspect (no policy), a row about token
		// sources to /v1/verify and /introspect (given the token), a bound
		// token to /introspect (SkipBinding) and Middleware (no sender
		// constraint, documented).
		skip string
	}{
		{"valid", mintRS256(claims(nil)), diffRequest{}, verdict{true, "valid"}, ""},
		{"expired", mintRS256(claims(map[string]any{"exp": now.Add(-time.Minute).Unix()})), diffRequest{}, verdict{false, "expired"}, ""},
		{"future-iat", mintRS256(claims(map[string]any{"iat": now.Add(time.Hour).Unix()})), diffRequest{}, verdict{false, "not_yet_valid"}, ""},
		{"wrong-aud", mintRS256(claims(map[string]any{"aud": "billing"})), diffRequest{}, verdict{false, "wrong_audience"}, ""},
		{"logout-kind", mintRS256(claims(map[string]any{"events": map[string]any{}})), diffRequest{}, verdict{false, "wrong_type"}, ""},
		{"too-long-lived", mintRS256(claims(map[string]any{"exp": now.Add(3 * time.Hour).Unix()})), diffRequest{}, verdict{false, "lifetime_exceeded"}, ""},
		{"too-large", mintRS256(claims(map[string]any{"pad": strings.Repeat("x", 3000)})), diffRequest{}, verdict{false, "token_too_large"}, ""},
		{"revoked-jti", mintRS256(claims(map[string]any{"jti": "j-revoked"})), diffRequest{}, verdict{false, "revoked"}, ""},
		{"revoked-sid", mintRS256(claims(map[string]any{"sid": "s-revoked"})), diffRequest{}, verdict{false, "revoked"}, ""},
		{"revoked-sub", mintRS256(claims(map[string]any{"sub": "bob"})), diffRequest{}, verdict{false, "revoked"}, ""},
		{"dpop-bound-as-bearer", mintRS256(claims(map[string]any{"cnf": map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}})), diffRequest{}, verdict{false, "binding_mismatch"}, "middleware introspect"},
		{"two-sources", mintRS256(claims(nil)), diffRequest{"GET", "/orders/1?access_token=" + mintRS256(claims(map[string]any{"jti": "other"})), bearer(mintRS256(claims(nil)))}, verdict{false, "malformed"}, "verify introspect middleware"},
		{"query-revoked", "", diffRequest{"GET", "/orders/1?access_token=" + mintRS256(claims(map[string]any{"jti": "j-revoked"})), nil}, verdict{false, "revoked"}, "verify introspect middleware"},
		{"policy-scope", mintRS256(claims(map[string]any{"scope": "billing:read"})), diffRequest{}, verdict{false, "forbidden"}, "middleware introspect"},
		{"policy-cel", mintRS256(claims(map[string]any{"sub": "mallory"})), diffRequest{}, verdict{false, "forbidden"}, "middleware introspect"},
	}
	for _, proxy := range []string{"nginx", "traefik", "caddy", "envoy"} {
		d := newDiffService(t, proxy)
		for _, e := range []revoke.Entry{
			{Issuer: iss, Kind: revoke.KindJTI, Value: "j-revoked"},
			{Issuer: iss, Kind: revoke.KindSID, Value: "s-revoked"},
			{Issuer: iss, Kind: revoke.KindSub, Value: "bob", IssuedBefore: now.Add(time.Minute)},
		} {
			e.Source = revoke.SourceAdmin
			if _, err := d.svc.Revocations().Add(context.Background(), e); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range tests {
			rq := orders(tt.tok)
			if tt.rq.path != "" {
				rq = tt.rq
			}
			got := map[string]verdict{
				"authz/" + proxy:     d.authz(t, proxy, rq),
				"grpc":               d.check(t, rq),
				"service-middleware": d.serviceMiddleware(t, rq),
			}
			if !strings.Contains(tt.skip, "verify") {
				got["verify"] = d.verifyJSON(t, tt.tok, rq)
			}
			if !strings.Contains(tt.skip, "middleware") {
				got["middleware"] = d.middleware(t, rq)
			}
			if !strings.Contains(tt.skip, "introspect") {
				if a := d.introspect(t, tt.tok); a != tt.want.allowed {
					t.Errorf("%s/%s: /introspect active=%v, want %v", proxy, tt.name, a, tt.want.allowed)
				}
			}
			for ep, v := range got {
				if v != tt.want {
					t.Errorf("%s/%s: %s = %+v, want %+v", proxy, tt.name, ep, v, tt.want)
				}
			}
		}
	}
}

// TestServiceMiddlewareFollowsReload: Service.Middleware decides with the
// generation current when each request starts: after a reload that adds a
// policy for /admin/**, the token the old plan let through is refused
// there, while server.Middleware over the old generation's verifier is
// fixed at build (a program that embeds the service takes
// Service.Middleware).
func TestServiceMiddlewareFollowsReload(t *testing.T) {
	jwksSrv := jwksServer(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	base := `listen: 127.0.0.1:0
issuers:
  - issuer: https://idp.example/
    jwks_url: ` + jwksSrv.URL + `
`
	l := startLive(t, writePlan(t, path, base))
	if err := l.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	tok := mintRS256(claimsAt("https://idp.example/", "", time.Now()))
	h := l.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	do := func() int {
		r := httptest.NewRequest("GET", "https://api.example/admin/users", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if c := do(); c != http.StatusOK {
		t.Fatalf("before the reload: %d, want 200", c)
	}
	mustReload(t, l, context.Background(), writePlan(t, path, base+`forward_auth: {proxy: nginx}
policies:
  - {name: admins, scopes: {any: [admin]}}
routes:
  - {path: /admin/**, policy: admins}
`))
	if c := do(); c != http.StatusForbidden {
		t.Errorf("after a reload that adds a policy for /admin/**: %d, want 403", c)
	}
}

// TestServiceMiddlewareDPoP: Service.Middleware checks a DPoP proof against
// the request itself: its own connection's scheme, its host and path. A
// proof naming https passes over TLS and fails over plain HTTP; a bound
// token sent as a bearer token is binding_mismatch.
func TestServiceMiddlewareDPoP(t *testing.T) {
	d := newDiffService(t, "nginx")
	k, err := cache.NewKey(testkeys.Public(testkeys.EC256A), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "cnf": map[string]any{"jkt": k.Thumbprint}})
	sum := sha256.Sum256([]byte(tok))
	proof := func(jti string) string {
		return testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A),
			map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256A)})},
			map[string]any{"jti": jti, "htm": "GET", "htu": "https://api.example/orders/1", "iat": now.Unix(), "ath": base64.RawURLEncoding.EncodeToString(sum[:])})
	}
	h := d.svc.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tests := []struct {
		name, url, scheme, proof string
		want                     int
		challenge                string
	}{
		{"proof-over-tls", "https://api.example/orders/1", "DPoP", proof("p1"), 200, ""},
		{"replayed", "https://api.example/orders/1", "DPoP", proof("p1"), 401, "invalid_dpop_proof"},
		{"plain-http", "http://api.example/orders/1", "DPoP", proof("p2"), 401, "invalid_dpop_proof"},
		{"other-path", "https://api.example/orders/2", "DPoP", proof("p3"), 401, "invalid_dpop_proof"},
		{"as-bearer", "https://api.example/orders/1", "Bearer", "", 401, "binding_mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.url, nil)
			r.Header.Set("Authorization", tt.scheme+" "+tok)
			if tt.proof != "" {
				r.Header.Set("DPoP", tt.proof)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want || !strings.Contains(w.Header().Get("WWW-Authenticate"), tt.challenge) {
				t.Errorf("%d %q, want %d with %q", w.Code, w.Header().Get("WWW-Authenticate"), tt.want, tt.challenge)
			}
		})
	}
}

// grpcClient serves s's gRPC Check on an in-memory listener for the test's
// life and returns a client of it.
func grpcClient(t *testing.T, s *Service) authv3.AuthorizationClient {
	t.Helper()
	return grpcClientWith(t, s)
}

// grpcClientWith is [grpcClient] of a grpc.Server built with opts.
func grpcClientWith(t *testing.T, s *Service, opts ...grpc.ServerOption) authv3.AuthorizationClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer(opts...)
	s.RegisterGRPC(g)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	cc, err := grpc.NewClient("passthrough:///buf", grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return authv3.NewAuthorizationClient(cc)
}
