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

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

// newIPRouteService starts a service behind proxy whose routes give the
// hosts 127.0.0.1 and ::1 a strict policy (scope admin) and every other
// host a lax one (any valid token), with its gRPC Check client.
func newIPRouteService(t *testing.T, proxy string) (*Service, authv3.AuthorizationClient) {
	t.Helper()
	dir := t.TempDir()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := `state_dir: ` + dir + `
forward_auth: {proxy: ` + proxy + `}
issuers:
  - issuer: https://a.example/
    jwks_file: ` + jwksFile + `
    audiences: [orders]
policies:
  - {name: strict, scopes: {all: [admin]}}
  - {name: lax}
routes:
  - {host: 127.0.0.1, path: /**, policy: strict}
  - {host: "::1", path: /**, policy: strict}
  - {path: /**, policy: lax}
`
	s := startPlan(t, doc, dir)
	gc := grpcClient(t, s)
	return s, gc
}

// TestIPHostSpellingsDifferential: a route for 127.0.0.1 (and one for ::1)
// is stricter than the catch-all. Every other spelling of those addresses
// (short, numeric, hex, octal, zero-padded, a trailing dot, non-canonical
// IPv6, IPv4-mapped IPv6) reaches the same application, so on every front
// end it is refused, never decided by the catch-all; the canonical
// spellings get the strict route and another host the lax one.
func TestIPHostSpellingsDifferential(t *testing.T) {
	now := time.Now()
	tok := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}) // valid, not admin
	type row struct {
		host string // as the Host header or X-*-Host carries it
		want verdict
	}
	forbidden, valid := verdict{false, "forbidden"}, verdict{true, "valid"}
	rows := []row{
		{"127.0.0.1", forbidden}, // the strict route
		{"127.0.0.1:8080", forbidden},
		{"[::1]", forbidden},
		{"[::1]:8443", forbidden},
		{"api.example", valid}, // the catch-all
		{"a1.example", valid},
		{"0x1.example", valid},
		{"1e100.net", valid},
	}
	for _, h := range []string{"127.1", "127.0.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0X7F.0.0.1", "0177.0.0.1",
		"127.000.000.001", "127.0.0.01", "127.0.0.1.", "127.0.0.1.:80", "1.2.3", "0x1", "0x", "example.123", "256.0.0.1",
		"[0:0::1]", "[::0001]", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]", "[::FFFF:127.0.0.1]", "[::ffff:7f00:1]",
		"[::ffff:127.0.0.1]:80", "[::127.0.0.1]"} {
		rows = append(rows, row{h, forbidden})
	}
	for _, proxy := range []string{"nginx", "traefik", "caddy", "envoy"} {
		s, grpcClient := newIPRouteService(t, proxy)
		for _, tt := range rows {
			got := map[string]verdict{
				"authz/" + proxy:     ipAuthz(s, proxy, tt.host, tok),
				"grpc":               ipCheck(t, grpcClient, tt.host, tok),
				"service-middleware": ipServiceMiddleware(s, tt.host, tok),
			}
			for ep, v := range got {
				if v != tt.want {
					t.Errorf("%s: host %q: %s = %+v, want %+v", proxy, tt.host, ep, v, tt.want)
				}
			}
		}
	}
}

func ipAuthz(s *Service, proxy, host, tok string) verdict {
	var r *http.Request
	switch proxy {
	case "nginx":
		r = httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
		r.Header.Set("X-Original-Method", "GET")
		r.Header.Set("X-Original-Uri", "/orders/1")
		r.Header.Set("X-Original-Host", host)
	case "traefik", "caddy":
		r = httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
		r.Header.Set("X-Forwarded-Method", "GET")
		r.Header.Set("X-Forwarded-Uri", "/orders/1")
		r.Header.Set("X-Forwarded-Host", host)
	case "envoy":
		r = httptest.NewRequest(http.MethodGet, "/v1/authz/orders/1", nil)
		r.Host = host
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return verdict{w.Code == 200, challengeClass(w.Code, w.Header().Get("WWW-Authenticate"))}
}

func ipCheck(t *testing.T, c authv3.AuthorizationClient, host, tok string) verdict {
	t.Helper()
	resp, err := c.Check(context.Background(), &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: "GET", Scheme: "https", Host: host, Path: "/orders/1", Headers: map[string]string{"authorization": "Bearer " + tok},
		}},
		Source: &authv3.AttributeContext_Peer{Address: &corev3.Address{}},
	}})
	if err != nil {
		return verdict{false, "grpc:" + err.Error()}
	}
	if resp.GetOkResponse() != nil {
		return verdict{true, "valid"}
	}
	var ch string
	for _, h := range resp.GetDeniedResponse().GetHeaders() {
		if strings.EqualFold(h.GetHeader().GetKey(), "WWW-Authenticate") {
			ch = h.GetHeader().GetValue()
		}
	}
	return verdict{false, challengeClass(int(resp.GetDeniedResponse().GetStatus().GetCode()), ch)}
}

// ipServiceMiddleware is Service.Middleware on a request to host itself.
func ipServiceMiddleware(s *Service, host, tok string) verdict {
	h := s.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest(http.MethodGet, "https://api.example/orders/1", nil)
	// As Go's server reads an origin-form request over TLS: r.Host from
	// the Host header, no host or scheme in r.URL (an absolute-form
	// target's host that is not r.Host is ambiguous).
	r.Host, r.URL.Host, r.URL.Scheme, r.RequestURI = host, "", "", "/orders/1"
	r.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return verdict{w.Code == 200, challengeClass(w.Code, w.Header().Get("WWW-Authenticate"))}
}
