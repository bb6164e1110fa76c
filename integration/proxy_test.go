package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The proxies run the committed files deploy/nginx/nginx.conf and
// deploy/caddy/Caddyfile. The test replaces only these documented
// addresses (each must appear exactly once outside comments, so an edit of
// the files that breaks the substitution fails loudly):
//
//	nginx:  "listen 8000"     -> "listen 127.0.0.1:<proxy port>"
//	Caddy:  ":8000 {"         -> ":<proxy port> {" (a host here would turn on TLS)
//	both:   "127.0.0.1:8080"  -> jwksverify's HTTP address
//	both:   "127.0.0.1:9000"  -> the echo upstream's address
const (
	placeholderJWKSVerify = "127.0.0.1:8080"
	placeholderUpstream   = "127.0.0.1:9000"
)

// proxyEnv is a proxy in front of the echo upstream, asking jwksverify.
type proxyEnv struct {
	URL      string // the proxy
	issuer   *testIssuer
	upstream *echo
}

// startBackends starts the echo upstream and jwksverify with one issuer.
func startBackends(t *testing.T) (*testIssuer, *echo, *jwksverifyProc) {
	t.Helper()
	is := newTestIssuer(t)
	up := startEcho(t)
	jv := startJWKSVerify(t, "listen: 127.0.0.1:0\nshutdown_timeout: 1s\nissuers:\n"+is.IssuerConfig())
	return is, up, jv
}

// startNginx runs real nginx with deploy/nginx/nginx.conf. nginx runs in the
// foreground with its pid file and prefix in a temp dir. Its compiled-in
// temporary paths (/var/lib/nginx/* on Debian) are the package's own and
// need root, which CI has.
func startNginx(t *testing.T) *proxyEnv {
	t.Helper()
	nginx := requireNginx(t)
	is, up, jv := startBackends(t)
	port := freePort(t)
	conf := substitute(t, "../deploy/nginx/nginx.conf", []substitution{
		{"listen 8000", "listen 127.0.0.1:" + strconv.Itoa(port)},
		{placeholderJWKSVerify, jv.HTTP},
		{placeholderUpstream, up.Addr},
	})
	return &proxyEnv{URL: "http://" + runNginx(t, nginx, conf, port), issuer: is, upstream: up}
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

// startCaddy runs real Caddy with deploy/caddy/Caddyfile (admin off, no
// automatic HTTPS), its data and config directories in temp dirs.
func startCaddy(t *testing.T) *proxyEnv {
	t.Helper()
	caddy := requireTool(t, "caddy", "caddy")
	is, up, jv := startBackends(t)
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	conf := substitute(t, "../deploy/caddy/Caddyfile", []substitution{
		{":8000 {", ":" + strconv.Itoa(port) + " {"},
		{placeholderJWKSVerify, jv.HTTP},
		{placeholderUpstream, up.Addr},
	})
	dir := t.TempDir()
	confPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddy, "run", "--config", confPath, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(),
		"HOME="+dir,
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
	)
	p := startProcess(t, "caddy", cmd)
	waitTCP(t, p, addr)
	return &proxyEnv{URL: "http://" + addr, issuer: is, upstream: up}
}

func TestNginxForwardAuth(t *testing.T) { testForwardAuth(t, startNginx(t)) }

func TestCaddyForwardAuth(t *testing.T) { testForwardAuth(t, startCaddy(t)) }

// testForwardAuth runs the forward-auth cases through a proxy: a valid token
// reaches the upstream with the subject header; no or an invalid token gets
// 401 with WWW-Authenticate from the proxy and never reaches the upstream;
// a client-sent X-Auth-Subject never reaches the upstream.
func testForwardAuth(t *testing.T, px *proxyEnv) {
	is := px.issuer
	tests := []struct {
		name        string
		method      string
		token       string // "" sends no Authorization
		spoof       bool   // the client sends X-Auth-Subject: admin and X-Auth-Scope: root
		body        string
		wantStatus  int
		wantSubject string // upstream's X-Auth-Subject ("" = absent or empty)
		wantScope   string
		wantWWW     string // the WWW-Authenticate the client gets (401s)
	}{
		{name: "valid", method: "GET", token: is.Token(nil), wantStatus: 200, wantSubject: "alice", wantScope: "orders:read"},
		{name: "valid-spoofed-subject", method: "GET", token: is.Token(nil), spoof: true, wantStatus: 200, wantSubject: "alice", wantScope: "orders:read"},
		{name: "valid-without-claims-spoofed", method: "GET", token: is.Token(map[string]any{"sub": nil, "scope": nil}), spoof: true, wantStatus: 200},
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
				req.Header.Set("X-Auth-Subject", "admin")
				req.Header.Set("X-Auth-Scope", "root")
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
				if got := resp.Header.Get("WWW-Authenticate"); got != tc.wantWWW {
					t.Errorf("WWW-Authenticate = %q, want %q", got, tc.wantWWW)
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
			} {
				vals := got.Headers.Values(h.name)
				switch {
				case h.want == "" && strings.Join(vals, "") != "":
					t.Errorf("upstream %s = %q, want absent or empty", h.name, vals)
				case h.want != "" && (len(vals) != 1 || vals[0] != h.want):
					t.Errorf("upstream %s = %q, want exactly [%q]", h.name, vals, h.want)
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
