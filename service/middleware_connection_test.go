package service

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A reverse proxy behind the Middleware (httputil.ReverseProxy, Caddy as a
// library) removes every header the request's Connection names, as RFC
// 9110 (7.6.1) asks of a proxy: a client that listed X-Auth-Subject there
// had the identity header the Middleware set removed on the way, and the
// application read none (an application that takes no subject, or no
// tenant, for a service token then grants more). A Connection that names
// an identity header set here is not handed on.
func TestMiddlewareIdentityHeadersSurviveAProxy(t *testing.T) {
	dir := t.TempDir()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startPlan(t, `state_dir: `+dir+`
issuers:
  - issuer: https://a.example/
    jwks_file: `+jwksFile+`
    audiences: [orders]
    claims_to_headers: {sub: X-Auth-Subject}
`, dir)
	now := time.Now()
	alice := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	seen := make(chan string, 1)
	app := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen <- r.Header.Get("X-Auth-Subject") }))
	t.Cleanup(app.Close)
	target, _ := url.Parse(app.URL)
	h := s.Middleware(httputil.NewSingleHostReverseProxy(target))
	for _, conn := range []string{"", "keep-alive", "X-Auth-Subject", "keep-alive, x-auth-subject", "Upgrade,\tX-AUTH-SUBJECT"} {
		t.Run(conn, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/orders/1", nil)
			r.Header.Set("Authorization", "Bearer "+alice)
			if conn != "" {
				r.Header.Set("Connection", conn)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				t.Fatalf("GET = %d, want 200", w.Code)
			}
			if got := <-seen; got != "alice" {
				t.Errorf("Connection: %s: the application read X-Auth-Subject %q, want alice", conn, got)
			}
		})
	}
}
