package service

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMiddlewareUnderStripPrefix: Service.Middleware mounted behind
// http.StripPrefix("/api", …) saw /orders/1 for a client's
// GET /api/orders/1: the route the configuration names for that request
// (/api/orders/**, as forward-auth decides it) did not apply and a token
// without orders:read reached the handler, while /v1/authz refused the same
// request; and a DPoP proof naming the URL the client sent was refused.
// A URL changed in front of the middleware is now ambiguous: refused
// wherever a policy (or a proof) needs the path.
func TestMiddlewareUnderStripPrefix(t *testing.T) {
	s := startOrdersPlan(t, `policies:
  - {name: orders-read, scopes: {any: [orders:read]}}
routes:
  - {path: /api/orders/**, policy: orders-read}
`)
	now := time.Now()
	tok := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "profile",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})

	fa := httptest.NewRequest("GET", "/v1/authz", nil)
	fa.Header.Set("X-Original-Method", "GET")
	fa.Header.Set("X-Original-Uri", "/api/orders/1")
	fa.Header.Set("X-Original-Host", "api.example")
	fa.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, fa)
	if w.Code != http.StatusForbidden {
		t.Fatalf("/v1/authz for GET /api/orders/1 = %d, want 403", w.Code)
	}

	reached := false
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", s.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))))
	r := httptest.NewRequest("GET", "https://api.example/api/orders/1", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	if reached || w.Code == http.StatusOK {
		t.Errorf("behind StripPrefix: %d, handler reached %v; /v1/authz refuses the same request", w.Code, reached)
	}
}

// startOrdersPlan starts a service behind the nginx preset with one issuer,
// https://a.example/ (audience orders, keys from testJWKS), and the
// policies and routes of rest.
func startOrdersPlan(t *testing.T, rest string) *Service {
	t.Helper()
	dir := t.TempDir()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	return startPlan(t, `state_dir: `+dir+`
forward_auth: {proxy: nginx}
issuers:
  - issuer: https://a.example/
    jwks_file: `+jwksFile+`
    audiences: [orders]
`+rest, dir)
}
