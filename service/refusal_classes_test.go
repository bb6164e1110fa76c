package service

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// TestNewRefusalsNameTheirClass: each refusal this session added is answered,
// on every front end that applies, with the class API.md's table gives it,
// the status of that class, the challenge, the body, the gRPC status and
// message, and is logged and counted under that class.
func TestNewRefusalsNameTheirClass(t *testing.T) {
	dir := t.TempDir()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := `state_dir: ` + dir + `
forward_auth: {proxy: nginx}
log: {rejections_per_second: 1000}
token_sources:
  - {header: Authorization, prefix: "Bearer "}
  - {query: access_token}
  - {cookie: access_token}
introspection: {clients: [{id: gateway, secret_env: GW_SECRET}]}
issuers:
  - issuer: https://a.example/
    jwks_file: ` + jwksFile + `
    audiences: [orders]
    required_claims: []
    max_lifetime: 2h
policies:
  - {name: strict, scopes: {all: [admin]}}
  - {name: lax}
routes:
  - {methods: [GET], path: /reports/**, policy: strict}
  - {path: /reports/**, policy: lax}
  - {path: "/@admin/**", policy: strict}
  - {host: 127.0.0.1, path: /**, policy: strict}
  - {path: /**, policy: lax}
`
	p, err := parsePlanEnv(doc, dir)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuf{}
	s, err := New(p, Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	gc := grpcClient(t, s)

	now := time.Now()
	base := func() map[string]any {
		return map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	}
	tok := mintRS256(base())
	noExpC := base()
	delete(noExpC, "exp")
	noExp := mintRS256(noExpC)

	type row struct {
		name               string
		method, host, path string
		authorization      string
		cookie             string
		verifyToken        string // "" : /v1/verify does not apply
		status             int
		class              string
		scope              string // the scope= the 403 names
	}
	rows := []row{
		{"ambiguous-ip-host", "GET", "127.1", "/orders/1", "Bearer " + tok, "", tok, 403, "forbidden", ""},
		{"head-as-get", "HEAD", "api.example", "/reports/q3", "Bearer " + tok, "", "", 403, "forbidden", "admin"},
		{"spelled-route", "GET", "api.example", "/%40admin/x", "Bearer " + tok, "", "", 403, "forbidden", ""},
		{"bearerx", "GET", "api.example", "/orders/1", "BearerX" + tok, "", "", 401, "malformed", ""},
		{"qs-bracket-name", "GET", "api.example", "/orders/1?%5Baccess_token%5D=" + tok, "", "", "", 401, "malformed", ""},
		{"no-exp-under-max-lifetime", "GET", "api.example", "/orders/1", "Bearer " + noExp, "", noExp, 401, "lifetime_exceeded", ""},
		{"cookie-python-split", "GET", "api.example", "/orders/1", "", "a=b access_token=" + tok, "", 401, "malformed", ""},
		{"cookie-padded-name", "GET", "api.example", "/orders/1", "", "access_token\u00a0=" + tok, "", 401, "malformed", ""},
		{"envoy-bang", "GET", "api.example", "/orders/1", "Bearer!" + tok, "", "", 401, "malformed", ""},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			logs.take()
			rq := refusalRequest{method: tt.method, host: tt.host, path: tt.path, authorization: tt.authorization, cookie: tt.cookie}
			checkHTTP(t, "authz", viaForwardAuth(s, rq), tt.status, tt.class, tt.scope)
			al := logs.take()
			checkLog(t, "authz", al, tt.class)
			if tt.name == "head-as-get" {
				// The 403 is strict's (scope="admin"), Decision.Policy and gRPC's
				// dynamic metadata name strict: so must the log line and the label.
				if !strings.Contains(al, `"policy":"strict"`) {
					t.Errorf("authz: the log line names another policy than the one that refused: %s", al)
				}
				if metricLines(s)[`jwksverify_policy_decisions_total{class="forbidden",policy="strict"}`] != 1 {
					t.Errorf("metrics: the refusal is not counted under strict, the policy that refused")
				}
			}
			checkGRPC(t, gc, rq, tt.status, tt.class, tt.scope)
			checkLog(t, "grpc", logs.take(), tt.class)
			checkHTTP(t, "middleware", viaMiddleware(s, rq), tt.status, tt.class, tt.scope)
			checkLog(t, "middleware", logs.take(), tt.class)
			if tt.verifyToken == "" {
				return
			}
			// /v1/verify under the catch-all's policy, with the request
			code, got, raw := viaVerify(s, tt.verifyToken, "lax", rq)
			if code != 200 || got.Error != tt.class || (tt.class == "forbidden") != got.Valid {
				t.Errorf("/v1/verify: %d %s, want 200 error %q", code, raw, tt.class)
			}
			checkLog(t, "verify", logs.take(), tt.class)
			if tt.class != "forbidden" {
				checkTokenVerdicts(t, s, logs, tt.verifyToken, tt.class)
			}
		})
	}
	var labels strings.Builder
	for l := range metricLines(s) {
		labels.WriteString(l)
	}
	for _, want := range []string{`class="lifetime_exceeded"`, `class="malformed"`, `class="forbidden"`} {
		if !strings.Contains(labels.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func checkHTTP(t *testing.T, ep string, w *httptest.ResponseRecorder, status int, class, scope string) {
	t.Helper()
	ch := w.Header().Get("WWW-Authenticate")
	var body struct {
		Valid bool   `json:"valid"`
		Error string `json:"error"`
	}
	json.Unmarshal(w.Body.Bytes(), &body)
	if w.Code != status {
		t.Errorf("%s: status %d, want %d (%s; %s)", ep, w.Code, status, ch, w.Body.String())
		return
	}
	switch status {
	case 401:
		want := `error="invalid_token", error_description="` + class + `"`
		if !strings.Contains(ch, want) {
			t.Errorf("%s: WWW-Authenticate %q, want %s", ep, ch, want)
		}
	case 403:
		if !strings.Contains(ch, `error="insufficient_scope"`) {
			t.Errorf("%s: WWW-Authenticate %q, want insufficient_scope", ep, ch)
		}
		if scope != "" && !strings.Contains(ch, `scope="`+scope+`"`) {
			t.Errorf("%s: WWW-Authenticate %q, want scope=%q", ep, ch, scope)
		}
	}
	if body.Error != class {
		t.Errorf("%s: body %q, want error %q", ep, w.Body.String(), class)
	}
}

func checkLog(t *testing.T, ep, logs, class string) {
	t.Helper()
	t.Log(ep, strings.TrimSpace(logs))
	if class == "forbidden" {
		if !strings.Contains(logs, `"msg":"request forbidden"`) {
			t.Errorf("%s: no forbidden log line: %s", ep, logs)
		}
		return
	}
	if !strings.Contains(logs, `"class":"`+class+`"`) {
		t.Errorf("%s: no log line of class %s: %s", ep, class, logs)
	}
}

// refusalRequest is the original request a refusal test sends through
// every front end.
type refusalRequest struct {
	method, host, path    string
	authorization, cookie string
}

// viaForwardAuth asks /v1/authz about rq behind the nginx preset.
func viaForwardAuth(s *Service, rq refusalRequest) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
	r.Header.Set("X-Original-Method", rq.method)
	r.Header.Set("X-Original-Uri", rq.path)
	r.Header.Set("X-Original-Host", rq.host)
	r.Header.Set("X-Original-Proto", "https")
	if rq.authorization != "" {
		r.Header.Set("Authorization", rq.authorization)
	}
	if rq.cookie != "" {
		r.Header.Set("Cookie", rq.cookie)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return w
}

// viaMiddleware runs rq itself through Service.Middleware.
func viaMiddleware(s *Service, rq refusalRequest) *httptest.ResponseRecorder {
	r := httptest.NewRequest(rq.method, "https://api.example"+rq.path, nil)
	// As Go's server reads an origin-form request over TLS: r.Host from
	// the Host header, no host or scheme in r.URL. An absolute URL's host
	// beside another r.Host is ambiguous (request.FromRequest), which would
	// refuse a row whatever its own host says (ambiguous-ip-host).
	r.Host, r.URL.Host, r.URL.Scheme, r.RequestURI = rq.host, "", "", rq.path
	if rq.authorization != "" {
		r.Header.Set("Authorization", rq.authorization)
	}
	if rq.cookie != "" {
		r.Header.Set("Cookie", rq.cookie)
	}
	w := httptest.NewRecorder()
	s.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(w, r)
	return w
}

// checkGRPC asks gRPC Check about rq as Envoy would and checks the
// answer's status (UNAUTHENTICATED for 401, PERMISSION_DENIED for 403, the
// class as its message) and its denied response as checkHTTP does.
func checkGRPC(t *testing.T, gc authv3.AuthorizationClient, rq refusalRequest, status int, class, scope string) {
	t.Helper()
	hs := map[string]string{}
	if rq.authorization != "" {
		hs["authorization"] = rq.authorization
	}
	if rq.cookie != "" {
		hs["cookie"] = rq.cookie
	}
	resp, err := gc.Check(context.Background(), &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: rq.method, Scheme: "https", Host: rq.host, Path: rq.path, Headers: hs,
		}},
		Source: &authv3.AttributeContext_Peer{Address: &corev3.Address{}},
	}})
	if err != nil {
		t.Errorf("grpc: %v", err)
		return
	}
	want := map[int]int32{401: 16, 403: 7}[status]
	if resp.GetStatus().GetCode() != want || resp.GetStatus().GetMessage() != class {
		t.Errorf("grpc: status %d %q, want %d %q", resp.GetStatus().GetCode(), resp.GetStatus().GetMessage(), want, class)
	}
	den := resp.GetDeniedResponse()
	w := httptest.NewRecorder()
	w.Code = int(den.GetStatus().GetCode())
	for _, h := range den.GetHeaders() {
		w.Header().Add(h.GetHeader().GetKey(), h.GetHeader().GetValue())
	}
	w.Body.WriteString(den.GetBody())
	checkHTTP(t, "grpc denied_response", w, status, class, scope)
}

// verifyAnswer is the part of /v1/verify's answer the refusal tests read.
type verifyAnswer struct {
	Valid   bool   `json:"valid"`
	Allowed *bool  `json:"allowed"`
	Error   string `json:"error"`
	Policy  string `json:"policy"`
}

// viaVerify asks /v1/verify about token under policy for the request rq;
// it returns the status, the answer and its body.
func viaVerify(s *Service, token, policy string, rq refusalRequest) (int, verifyAnswer, string) {
	body := `{"token":` + jsonQuote(token) + `,"policy":"` + policy + `","request":{"method":"` + rq.method +
		`","scheme":"https","host":` + jsonQuote(rq.host) + `,"path":` + jsonQuote(rq.path) + `}}`
	r := httptest.NewRequest(http.MethodPost, "/v1/verify", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	var got verifyAnswer
	json.Unmarshal(w.Body.Bytes(), &got)
	return w.Code, got, w.Body.String()
}

// checkTokenVerdicts checks that a batch names token's class and that
// /introspect answers it inactive, each logged under the class.
func checkTokenVerdicts(t *testing.T, s *Service, logs *lockedBuf, token, class string) {
	t.Helper()
	br := httptest.NewRequest(http.MethodPost, "/v1/verify/batch", strings.NewReader(`{"tokens":[`+jsonQuote(token)+`]}`))
	br.Header.Set("Content-Type", "application/json")
	bw := httptest.NewRecorder()
	s.Handler().ServeHTTP(bw, br)
	if bw.Code != 200 || !strings.Contains(bw.Body.String(), `"error":"`+class+`"`) {
		t.Errorf("batch: %d %s", bw.Code, bw.Body.String())
	}
	checkLog(t, "batch", logs.take(), class)
	ir := httptest.NewRequest(http.MethodPost, "/introspect", strings.NewReader("token="+token))
	ir.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	ir.SetBasicAuth("gateway", "gateway-secret-value")
	iw := httptest.NewRecorder()
	s.Handler().ServeHTTP(iw, ir)
	if iw.Code != 200 || strings.TrimSpace(iw.Body.String()) != `{"active":false}` {
		t.Errorf("introspect: %d %s", iw.Code, iw.Body.String())
	}
	checkLog(t, "introspect", logs.take(), class)
}
