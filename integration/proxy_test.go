package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The proxies run what `jwksverify proxy-config nginx|caddy` prints for the
// configuration jwksverify itself runs (deploy/'s copies of that output for
// the example configuration are checked against a fresh generation by
// cmd/jwksverify/internal/proxyconfig's TestDeployFiles). The configuration
// names three claim headers, and a second issuer whose keys never load, so
// that its tokens are answered 503 keys_unavailable.

// claimHeaders are the headers the proxy tests' configuration names, with
// the claims they come from.
var claimHeaders = []struct{ claim, header string }{
	{"sub", "X-Auth-Subject"},
	{"scope", "X-Auth-Scope"},
	{"email", "X-Auth-Email"},
}

// proxyEnv is a proxy in front of the echo upstream, asking jwksverify.
type proxyEnv struct {
	URL      string // the proxy
	issuer   *testIssuer
	down     *testIssuer // its keys are unavailable: 503
	upstream *echo
}

// proxyBackends are the echo upstream and the configuration of jwksverify
// for a proxy preset; jv is nil when jwksverify is not started (down).
type proxyBackends struct {
	is, down *testIssuer
	upstream *echo
	config   string // the configuration file jwksverify runs
}

// startBackends starts the echo upstream and, unless jwksverifyDown,
// jwksverify with a configuration for proxy preset px on a fixed loopback
// port: authAddr's port when given (a stand-in listening there instead).
// extra is added to the configuration (top-level keys).
func startBackends(t *testing.T, px string, jwksverifyDown bool, authAddr, extra string) proxyBackends {
	t.Helper()
	port := freePort(t)
	if authAddr != "" {
		_, p, err := net.SplitHostPort(authAddr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ = strconv.Atoi(p)
	}
	is := newTestIssuer(t)
	down := &testIssuer{Issuer: "https://down.e2e.example/", Audience: is.Audience}
	var mapping []string
	for _, c := range claimHeaders {
		mapping = append(mapping, c.claim+": "+c.header)
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
shutdown_timeout: 1s
forward_auth: {proxy: %s}
%sissuers:
%s    claims_to_headers: {%s}
  - issuer: %s
    jwks_url: http://127.0.0.1:%d/jwks
    allow_insecure_http: true
    audiences: [%s]
    refresh: {fetch_timeout: 1s, unknown_kid_wait: 200ms}
`, port, px, extra, strings.Replace(is.IssuerConfig(), "    claims_to_headers: {sub: X-Auth-Subject, scope: X-Auth-Scope}\n", "", 1),
		strings.Join(mapping, ", "), down.Issuer, freePort(t), down.Audience)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if !jwksverifyDown {
		startJWKSVerifyWith(t, cfg, jwksverifyOptions{Unready: true})
	}
	return proxyBackends{is: is, down: down, upstream: startEcho(t), config: path}
}

// proxyConfig runs `jwksverify proxy-config px` for b's configuration, the
// proxy listening on listen.
func proxyConfig(t *testing.T, px string, b proxyBackends, listen string) string {
	t.Helper()
	cmd := exec.Command(jwksverifyBinary(t), "proxy-config", px, "--config", b.config, "--listen", listen, "--upstream", b.upstream.Addr)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jwksverify proxy-config %s: %v\n%s", px, err, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("jwksverify proxy-config %s warned for a configuration that sets forward_auth.proxy: %s", px, stderr.String())
	}
	return string(out)
}

// startNginx runs real nginx with the generated configuration. nginx runs
// in the foreground with its pid file and prefix in a temp dir. Its
// compiled-in temporary paths (/var/lib/nginx/* on Debian) are the package's
// own and need root, which CI has.
func startNginx(t *testing.T, jwksverifyDown bool, authAddr string) *proxyEnv {
	t.Helper()
	return startNginxWith(t, jwksverifyDown, authAddr, "")
}

// startNginxWith is startNginx with extra top-level keys in jwksverify's
// configuration.
func startNginxWith(t *testing.T, jwksverifyDown bool, authAddr, extra string) *proxyEnv {
	t.Helper()
	nginx := requireNginx(t)
	b := startBackends(t, "nginx", jwksverifyDown, authAddr, extra)
	port := freePort(t)
	addr := runNginx(t, nginx, proxyConfig(t, "nginx", b, "127.0.0.1:"+strconv.Itoa(port)), port)
	return &proxyEnv{URL: "http://" + addr, issuer: b.is, down: b.down, upstream: b.upstream}
}

// requireNginx returns the nginx executable, failing under CI=true (and
// skipping elsewhere) when it is missing or the test does not run as root.
func requireNginx(t *testing.T) string {
	t.Helper()
	nginx := requireTool(t, "nginx", "nginx")
	if os.Geteuid() != 0 {
		msg := "nginx's compiled-in temporary paths (/var/lib/nginx) need root"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return nginx
}

// runNginx runs nginx in the foreground with conf, its pid file and prefix
// in a temp dir, and returns its address once it listens on port.
func runNginx(t *testing.T, nginx, conf string, port int) string {
	t.Helper()
	dir := t.TempDir()
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "nginx", exec.Command(nginx,
		"-e", "stderr", "-p", dir+"/", "-c", confPath,
		"-g", fmt.Sprintf("daemon off; pid %s;", filepath.Join(dir, "nginx.pid"))))
	addr := "127.0.0.1:" + strconv.Itoa(port)
	waitTCP(t, p, addr)
	return addr
}

// startCaddy runs real Caddy with the generated configuration (admin off,
// an http:// site address: no automatic HTTPS), its data and config
// directories in temp dirs.
func startCaddy(t *testing.T, jwksverifyDown bool, authAddr string) *proxyEnv {
	t.Helper()
	return startCaddyWith(t, jwksverifyDown, authAddr, "")
}

// startCaddyWith is startCaddy with extra top-level keys in jwksverify's
// configuration.
func startCaddyWith(t *testing.T, jwksverifyDown bool, authAddr, extra string) *proxyEnv {
	t.Helper()
	caddy := requireTool(t, "caddy", "caddy")
	b := startBackends(t, "caddy", jwksverifyDown, authAddr, extra)
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	runCaddy(t, caddy, proxyConfig(t, "caddy", b, addr), addr)
	return &proxyEnv{URL: "http://" + addr, issuer: b.is, down: b.down, upstream: b.upstream}
}

// runCaddy runs real Caddy with conf (a Caddyfile) until it listens on
// addr, its data and config directories in temp dirs.
func runCaddy(t *testing.T, caddy, conf, addr string) {
	t.Helper()
	dir := t.TempDir()
	confPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddy, "run", "--config", confPath, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	waitTCP(t, startProcess(t, "caddy", cmd), addr)
}

func TestNginxForwardAuth(t *testing.T) { testForwardAuth(t, startNginx(t, false, "")) }

func TestCaddyForwardAuth(t *testing.T) { testForwardAuth(t, startCaddy(t, false, "")) }

// TestProxyOriginalRequestHeaders: the auth call of the generated nginx and
// Caddy files carries the original request in exactly the headers the
// forward_auth.proxy preset reads (request.Proxy.Headers), with the proxy's
// values over the ones a client forged, and no claim header. An echo server
// stands in for jwksverify to record the auth call (jwksverify reads these
// headers only for routes and policies); it answers 200, so the request also
// reaches the upstream.
func TestProxyOriginalRequestHeaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  func(*testing.T, bool, string) *proxyEnv
		preset request.Proxy
	}{
		{"nginx", startNginx, request.Nginx},
		{"caddy", startCaddy, request.Caddy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := startEcho(t)
			px := tc.start(t, true, auth.Addr)
			req, _ := http.NewRequest("GET", px.URL+"/orders/7?page=2", nil)
			for _, p := range []request.Proxy{request.Nginx, request.Caddy} {
				h, _ := p.Headers()
				for _, name := range []string{h.Method, h.URI, h.Host, h.Proto} {
					req.Header.Set(name, "forged")
				}
			}
			for _, h := range claimHeaders {
				req.Header.Set(h.header, "forged-"+h.claim)
			}
			resp, err := httpClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := auth.Last()
			if got == nil || auth.Hits() != 1 {
				t.Fatalf("the auth stand-in got %d requests, want 1 (status %d)", auth.Hits(), resp.StatusCode)
			}
			host := strings.TrimPrefix(px.URL, "http://")
			host, _, _ = strings.Cut(host, ":")
			h, _ := tc.preset.Headers()
			for name, want := range map[string]string{h.Method: "GET", h.URI: "/orders/7?page=2", h.Host: host, h.Proto: "http"} {
				vals := got.Headers.Values(name)
				if len(vals) == 1 && name == h.Host {
					// With or without the port: jwksverify reads it as request.NormalizeHost does.
					vals[0] = request.NormalizeHost(vals[0])
				}
				if len(vals) != 1 || vals[0] != want {
					t.Errorf("auth call %s = %q, want exactly [%q]", name, vals, want)
				}
			}
			for _, h := range claimHeaders {
				if v := got.Headers.Get(h.header); v != "" {
					t.Errorf("auth call carries the client's %s = %q, want it cleared", h.header, v)
				}
			}
		})
	}
}

// TestProxyJWKSVerifyDown: with jwksverify not running, nginx answers 503
// (could not decide, as jwksverify's own 503) instead of auth_request's
// 500, with a body that says jwksverify did not answer — never
// keys_unavailable, which blames the IdP; Caddy answers 502 (docs/DEPLOY.md
// says so). Neither lets the request through.
func TestProxyJWKSVerifyDown(t *testing.T) {
	for _, tc := range []struct {
		name     string
		start    func(*testing.T, bool, string) *proxyEnv
		want     int
		wantBody string // in the body
	}{
		{"nginx", startNginx, http.StatusServiceUnavailable, `"error":"jwksverify_unreachable"`},
		{"caddy", startCaddy, http.StatusBadGateway, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px := tc.start(t, true, "")
			req, _ := http.NewRequest("GET", px.URL+"/orders/7", nil)
			req.Header.Set("Authorization", "Bearer "+px.issuer.Token(nil))
			resp, err := httpClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode != tc.want || px.upstream.Hits() != 0 {
				t.Errorf("GET with jwksverify down = %d, upstream hits %d; want %d and 0", resp.StatusCode, px.upstream.Hits(), tc.want)
			}
			if !strings.Contains(string(data), tc.wantBody) || strings.Contains(string(data), "keys_unavailable") {
				t.Errorf("body with jwksverify down = %q, want it to contain %q and not blame the keys", data, tc.wantBody)
			}
		})
	}
}

// testForwardAuth runs the forward-auth cases through a proxy: a valid token
// reaches the upstream with the three claim headers from its claims; no or
// an invalid token gets 401 with WWW-Authenticate from the proxy and never
// reaches the upstream; a token whose keys are unavailable gets 503; a
// client-sent value of any claim header never reaches the upstream.
func testForwardAuth(t *testing.T, px *proxyEnv) {
	is := px.issuer
	email := map[string]any{"email": "alice@example.com"}
	tests := []struct {
		name        string
		method      string
		token       string // "" sends no Authorization
		spoof       bool   // the client sends a forged value of every claim header
		body        string
		wantStatus  int
		wantSubject string // upstream's X-Auth-Subject ("" = absent or empty)
		wantScope   string
		wantEmail   string
		wantWWW     string // the WWW-Authenticate the client gets (401s)
	}{
		{name: "valid", method: "GET", token: is.Token(email), wantStatus: 200, wantSubject: "alice", wantScope: "orders:read", wantEmail: "alice@example.com"},
		{name: "valid-spoofed", method: "GET", token: is.Token(email), spoof: true, wantStatus: 200, wantSubject: "alice", wantScope: "orders:read", wantEmail: "alice@example.com"},
		{name: "valid-without-email-spoofed", method: "GET", token: is.Token(nil), spoof: true, wantStatus: 200, wantSubject: "alice", wantScope: "orders:read"},
		{name: "valid-without-claims-spoofed", method: "GET", token: is.Token(map[string]any{"sub": nil, "scope": nil}), spoof: true, wantStatus: 200},
		{name: "keys-unavailable-spoofed", method: "GET", token: px.down.Token(nil), spoof: true, wantStatus: 503},
		{name: "valid-post-body-reaches-upstream", method: "POST", token: is.Token(nil), body: `{"order":7}`, wantStatus: 200, wantSubject: "alice", wantScope: "orders:read"},
		{name: "no-token", method: "GET", wantStatus: 401, wantWWW: `Bearer realm="jwksverify"`},
		{name: "no-token-spoofed", method: "GET", spoof: true, wantStatus: 401, wantWWW: `Bearer realm="jwksverify"`},
		{name: "expired-spoofed", method: "GET", token: is.Token(map[string]any{"exp": 1_000_000_000}), spoof: true, wantStatus: 401,
			wantWWW: `Bearer error="invalid_token", error_description="expired"`},
		{name: "bad-signature", method: "GET", token: is.ForgedToken(), wantStatus: 401,
			wantWWW: `Bearer error="invalid_token", error_description="bad_signature"`},
		{name: "wrong-audience", method: "POST", token: is.Token(map[string]any{"aud": "api://other"}), body: "x", wantStatus: 401,
			wantWWW: `Bearer error="invalid_token", error_description="wrong_audience"`},
		{name: "garbage", method: "GET", token: "not.a.jwt", spoof: true, wantStatus: 401,
			wantWWW: `Bearer error="invalid_token", error_description="malformed"`},
	}
	c := httpClient()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequest(tc.method, px.URL+"/orders/7?page=2", body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.spoof {
				for _, h := range claimHeaders {
					req.Header.Set(h.header, "forged-"+h.claim)
					// A CGI upstream reads X_Auth_Subject as X-Auth-Subject.
					for _, tw := range server.HeaderTwins(h.header) {
						req.Header[tw] = []string{"forged-" + h.claim}
					}
				}
			}
			hitsBefore := px.upstream.Hits()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.method, req.URL, err)
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d (body %q)", resp.StatusCode, tc.wantStatus, data)
			}
			hits := px.upstream.Hits() - hitsBefore
			if tc.wantStatus != http.StatusOK {
				if tc.wantStatus == http.StatusServiceUnavailable && !strings.Contains(string(data), "keys_unavailable") {
					t.Errorf("503 body = %q, want it to name keys_unavailable", data)
				}
				if got := resp.Header.Values("WWW-Authenticate"); tc.wantWWW == "" && len(got) != 0 || tc.wantWWW != "" && (len(got) != 1 || got[0] != tc.wantWWW) {
					t.Errorf("WWW-Authenticate = %q, want exactly [%q]", got, tc.wantWWW)
				}
				if tc.wantStatus == http.StatusUnauthorized {
					// The class, as jwksverify's own body names it: the proxy's
					// 401 is JSON like its 403, not the proxy's HTML page.
					class := "missing_token"
					if _, d, ok := strings.Cut(tc.wantWWW, `error_description="`); ok {
						class, _, _ = strings.Cut(d, `"`)
					}
					var body struct {
						Valid *bool  `json:"valid"`
						Error string `json:"error"`
					}
					if err := json.Unmarshal(data, &body); err != nil || body.Valid == nil || *body.Valid || body.Error != class {
						t.Errorf("401 body = %q (%v), want JSON valid:false error:%s", data, err, class)
					}
					if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
						t.Errorf("401 Content-Type = %q, want application/json", ct)
					}
				}
				if hits != 0 {
					t.Errorf("upstream got %d requests, want 0 for a denied request", hits)
				}
				return
			}
			if hits != 1 {
				t.Errorf("upstream got %d requests, want 1", hits)
			}
			var got echoed
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("upstream answer %q: %v", data, err)
			}
			for _, h := range []struct{ name, want string }{
				{"X-Auth-Subject", tc.wantSubject},
				{"X-Auth-Scope", tc.wantScope},
				{"X-Auth-Email", tc.wantEmail},
			} {
				vals := got.Headers.Values(h.name)
				switch {
				case h.want == "" && strings.Join(vals, "") != "":
					t.Errorf("upstream %s = %q, want absent or empty", h.name, vals)
				case h.want != "" && (len(vals) != 1 || vals[0] != h.want):
					t.Errorf("upstream %s = %q, want exactly [%q]", h.name, vals, h.want)
				}
			}
			for _, h := range claimHeaders {
				for _, tw := range server.HeaderTwins(h.header) {
					if vals := got.Headers.Values(tw); len(vals) != 0 {
						t.Errorf("upstream %s = %q, want absent (the twin of %s)", tw, vals, h.header)
					}
				}
			}
			if got.URI != "/orders/7?page=2" || got.Method != tc.method || got.Body != tc.body {
				t.Errorf("upstream got %s %s body %q, want %s /orders/7?page=2 body %q", got.Method, got.URI, got.Body, tc.method, tc.body)
			}
		})
	}
}

// TestEnvoyModesAgainstBinary drives the real binary the way
// deploy/envoy/envoy.yaml makes Envoy do it (Envoy itself does not install
// here): ext_authz gRPC (the CheckRequest Envoy sends, to grpc_listen, and
// grpc.health.v1 as its cluster health check) and ext_authz HTTP (the
// original path appended to /v1/authz).
func TestEnvoyModesAgainstBinary(t *testing.T) {
	is := newTestIssuer(t)
	jv := startJWKSVerify(t, "listen: 127.0.0.1:0\ngrpc_listen: 127.0.0.1:0\nshutdown_timeout: 1s\nissuers:\n"+is.IssuerConfig())
	if jv.GRPC == "" || jv.GRPC == jv.HTTP {
		t.Fatalf("listening http = %q, grpc = %q, want two addresses", jv.HTTP, jv.GRPC)
	}
	conn, err := grpc.NewClient(jv.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()

	t.Run("grpc-health", func(t *testing.T) {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Health.Check() = %v, %v; want SERVING", resp, err)
		}
	})

	check := func(authorization string) (*authv3.CheckResponse, error) {
		headers := map[string]string{":authority": "app", ":method": "GET", ":path": "/orders/7", "x-auth-subject": "admin"}
		if authorization != "" {
			headers["authorization"] = authorization
		}
		return authv3.NewAuthorizationClient(conn).Check(ctx, &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
			Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
				Method: "GET", Path: "/orders/7", Host: "app", Scheme: "http", Protocol: "HTTP/1.1", Headers: headers,
			}},
		}})
	}
	t.Run("grpc-valid", func(t *testing.T) {
		resp, err := check("Bearer " + is.Token(nil))
		if err != nil || codes.Code(resp.GetStatus().GetCode()) != codes.OK {
			t.Fatalf("Check() = %v, %v; want OK", resp, err)
		}
		got := map[string]string{}
		for _, h := range resp.GetOkResponse().GetHeaders() {
			if h.GetAppendAction() != corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD {
				t.Errorf("header %s appends; want it to overwrite a client's value", h.GetHeader().GetKey())
			}
			got[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
		}
		if got["x-auth-subject"] != "alice" || got["x-auth-scope"] != "orders:read" {
			t.Errorf("Check() headers = %v, want x-auth-subject alice, x-auth-scope orders:read", got)
		}
	})
	t.Run("grpc-invalid", func(t *testing.T) {
		resp, err := check("Bearer " + is.ForgedToken())
		if err != nil || codes.Code(resp.GetStatus().GetCode()) != codes.Unauthenticated ||
			resp.GetDeniedResponse().GetStatus().GetCode() != typev3.StatusCode_Unauthorized {
			t.Fatalf("Check() = %v, %v; want DENIED with HTTP 401", resp, err)
		}
	})

	t.Run("http-path-appended", func(t *testing.T) {
		c := httpClient()
		for _, tc := range []struct {
			name, token string
			want        int
		}{
			{"valid", is.Token(nil), http.StatusOK},
			{"forged", is.ForgedToken(), http.StatusUnauthorized},
		} {
			req, _ := http.NewRequest("GET", "http://"+jv.HTTP+"/v1/authz/orders/7?page=2", nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s: GET /v1/authz/orders/7 = %d, want %d", tc.name, resp.StatusCode, tc.want)
			}
			if tc.want == http.StatusOK && resp.Header.Get("X-Auth-Subject") != "alice" {
				t.Errorf("%s: X-Auth-Subject = %q, want alice", tc.name, resp.Header.Get("X-Auth-Subject"))
			}
		}
	})
}

// TestProxyStripAuthorization: with forward_auth.strip_authorization, the
// generated nginx and Caddy files never pass the token to the application
// (CONFIG.md: "the upstream never sees the token"), as Envoy does by
// jwksverify's x-envoy-auth-headers-to-remove.
func TestProxyStripAuthorization(t *testing.T) {
	for _, px := range []string{"nginx", "caddy"} {
		t.Run(px, func(t *testing.T) {
			is := newTestIssuer(t)
			up := startEcho(t)
			cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nshutdown_timeout: 1s\nforward_auth: {proxy: %s, strip_authorization: true}\nissuers:\n%s",
				freePort(t), px, is.IssuerConfig())
			addr := startBehindProxy(t, px, cfg, up)
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/orders/1", nil)
			req.Header.Set("Authorization", "Bearer "+is.Token(nil))
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || up.Last() == nil {
				t.Fatalf("status = %d (upstream reached: %t), want 200", resp.StatusCode, up.Last() != nil)
			}
			if a := up.Last().Headers.Values("Authorization"); len(a) != 0 {
				t.Errorf("the application got %d Authorization values, want none", len(a))
			}
		})
	}
}
