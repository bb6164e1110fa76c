package server

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/policy/celexpr"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestHostAsNginxReadsIt: nginx (ngx_http_validate_host) takes the host to
// be everything before the first ':' and never reads the port, so "Host:
// admin.example.com:1:2" is served by server_name admin.example.com, and
// the shipped nginx.conf forwards $http_host as X-Original-Host. Such a
// host, and one that Unicode case folding would read as another
// ("\u212Aiosk" as kiosk), is ambiguous: denied, never routed elsewhere.
func TestHostAsNginxReadsIt(t *testing.T) {
	h := newRoutedHandler(t, request.Nginx, policy.Options{
		Policies: []policy.Spec{
			{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
			{Name: "user"},
			{Name: "kiosk", AllowAnonymous: true},
		},
		Routes: []policy.Route{{Host: "admin.example.com", Path: "/**", Policy: "admin"},
			{Host: "kiosk.example.com", Path: "/**", Policy: "kiosk"}},
		DefaultPolicy: "user",
	}, nil)
	user := mint(claims(map[string]any{"groups": []string{"staff"}})) // a valid token, not an admin
	for _, host := range []string{"admin.example.com", "admin.example.com:443", "ADMIN.example.com.", "admin.example.com:1:2", "admin.example.com:x:"} {
		r := nginxAuthz("DELETE", "/users/1", user, map[string]string{"X-Original-Host": host})
		w := do(h, r)
		if w.Code != http.StatusForbidden {
			t.Errorf("X-Original-Host %q: %d, want 403 (nginx serves it as admin.example.com)", host, w.Code)
		}
	}
	for _, host := range []string{"kiosk.example.com", "kiosk.example.com:8080"} {
		if w := do(h, nginxAuthz("GET", "/screen", "", map[string]string{"X-Original-Host": host})); w.Code != http.StatusOK {
			t.Errorf("X-Original-Host %q without a token: %d, want 200 (the anonymous kiosk route)", host, w.Code)
		}
	}
	// nginx serves KIOSK.example.com and kiosk.example.com. as its
	// kiosk.example.com, and hands the application the Host as sent: Go's
	// ServeMux matches neither to a kiosk.example.com/ pattern, and runs
	// the handler the default guards.
	for _, host := range []string{"KIOSK.example.com:8080", "kiosk.example.com.", "\u212Aiosk.example.com", "kiosk.example.com.:80:80", "kiosk..example.com", "kiosk.example.com%2e", "[::1", "kiosk.example.com:123456"} {
		if w := do(h, nginxAuthz("GET", "/screen", "", map[string]string{"X-Original-Host": host})); w.Code == http.StatusOK {
			t.Errorf("X-Original-Host %q without a token: %d, want a denial (an ambiguous host)", host, w.Code)
		}
	}
}

// newRoutedHandler is the HTTP handler of a server behind proxy deciding
// with the policies and routes of po (its CEL compiler set here), reading
// the token from sources (nil: Authorization: Bearer).
func newRoutedHandler(t *testing.T, proxy request.Proxy, po policy.Options, sources []TokenSource) http.Handler {
	t.Helper()
	po.Compiler = &celexpr.Compiler{}
	set, err := policy.New(po)
	if err != nil {
		t.Fatal(err)
	}
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 100, IndexClaims: set.ClaimNames()})
	srv, err := New(Options{Verifier: ve.V, ClaimsToHeaders: servertest.ClaimsToHeaders(), Proxy: proxy, Policies: set,
		TokenSources: sources, Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil)), Now: ve.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return srv.Handler()
}
