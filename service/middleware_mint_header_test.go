package service

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// TestMiddlewareDropsTheClientsMintHeader: the Middleware mints nothing,
// so the handler behind it must not read a client's own copy of the mint
// header (or a CGI twin) as the token jwksverify signed; the proxies drop
// it before forward-auth, the Middleware drops it before the handler.
func TestMiddlewareDropsTheClientsMintHeader(t *testing.T) {
	dir := mintKeysDir(t)
	s := startPlan(t, `state_dir: `+dir+`
forward_auth: {proxy: nginx}
mint: {issuer: https://jwksverify.internal, keys_file: `+filepath.Join(dir, "mint.jwks")+`, signing_kid: k1, header: X-Internal-Token}
issuers:
  - issuer: https://a.example/
    jwks_file: `+filepath.Join(dir, "jwks.json")+`
    audiences: [orders]
policies:
  - {name: public, allow_anonymous: true}
  - {name: p, mint: {audience: internal}}
routes:
  - {path: /public/**, policy: public}
  - {path: /**, policy: p}
`, dir)
	now := time.Now()
	alice := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	for _, tt := range []struct{ name, path, token string }{
		{"token", "/orders/1", alice},
		{"anonymous", "/public/1", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var seen http.Header
			h := s.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() }))
			r := httptest.NewRequest("GET", "https://api.example"+tt.path, nil)
			r.Header["X-Internal-Token"] = []string{"forged"}
			r.Header["X_internal_token"] = []string{"forged"}
			if tt.token != "" {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK || seen == nil {
				t.Fatalf("GET %s = %d, handler reached %v; want 200", tt.path, w.Code, seen != nil)
			}
			for _, name := range []string{"X-Internal-Token", "X_internal_token"} {
				if got := seen[name]; got != nil {
					t.Errorf("GET %s: the handler read the client's %s = %q", tt.path, name, got)
				}
			}
			if r.Header.Get("X-Internal-Token") != "forged" {
				t.Error("the caller's own request was changed")
			}
		})
	}
}
