package service

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMiddlewareIdentityHeadersAsDecided: the configured identity headers
// (claims_to_headers of the issuers and policies) are what forward-auth
// answers on allow, each one set, or empty, so that a copy the client sent
// is overwritten, never passed through. Service.Middleware is the same
// decision in process: the handler behind it must read the identity
// jwksverify decided, not the one the client wrote.
func TestMiddlewareIdentityHeadersAsDecided(t *testing.T) {
	dir := t.TempDir()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startPlan(t, `state_dir: `+dir+`
forward_auth: {proxy: nginx}
issuers:
  - issuer: https://a.example/
    jwks_file: `+jwksFile+`
    audiences: [orders]
    claims_to_headers: {sub: X-Auth-Subject}
policies:
  - {name: public, allow_anonymous: true}
  - {name: admin, scopes: {any: [orders:read]}, claims_to_headers: {sub: X-Admin-Subject}}
routes:
  - {path: /public/**, policy: public}
  - {path: /admin/**, policy: admin}
`, dir)
	now := time.Now()
	alice := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	// X_auth_subject is how net/http keys an X_Auth_Subject header: a CGI
	// application (net/http/cgi too) reads it as X-Auth-Subject.
	forged := http.Header{"X-Auth-Subject": {"admin"}, "X-Admin-Subject": {"admin"}, "X_auth_subject": {"admin"}}
	tests := []struct {
		name, path, token string
		want              map[string]string // what the handler reads; "" is absent or empty
	}{
		{"token", "/orders/1", alice, map[string]string{"X-Auth-Subject": "alice", "X-Admin-Subject": ""}},
		{"policy-headers", "/admin/1", alice, map[string]string{"X-Auth-Subject": "", "X-Admin-Subject": "alice"}},
		{"anonymous", "/public/1", "", map[string]string{"X-Auth-Subject": "", "X-Admin-Subject": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen http.Header
			h := s.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() }))
			r := httptest.NewRequest("GET", "https://api.example"+tt.path, nil)
			for k, v := range forged {
				r.Header[k] = v
			}
			if tt.token != "" {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK || seen == nil {
				t.Fatalf("GET %s = %d, handler reached %v; want 200", tt.path, w.Code, seen != nil)
			}
			for name, want := range tt.want {
				if got := seen.Values(name); len(got) > 1 || seen.Get(name) != want {
					t.Errorf("GET %s: the handler read %s = %q, want %q (the client sent %q)", tt.path, name, got, want, forged.Get(name))
				}
			}
			if got := seen["X_auth_subject"]; got != nil {
				t.Errorf("GET %s: the handler read the CGI twin X_auth_subject = %q", tt.path, got)
			}
		})
	}
}
