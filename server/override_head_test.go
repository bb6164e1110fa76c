package server

import (
	"net/http/httptest"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
)

// TestOverrideToHeadDecidedAsGet: a method override naming HEAD runs the
// request as HEAD (Rack::MethodOverride and Laravel take HEAD), and Rails,
// Laravel, Express and Go's ServeMux run a HEAD with the GET handler. So a
// POST carrying _method=HEAD (or X-HTTP-Method-Override: HEAD) must be
// decided as GET too, as a HEAD itself is: with a strict route for GET and
// a lax one for the other methods, it passed under the lax one.
func TestOverrideToHeadDecidedAsGet(t *testing.T) {
	e := newRoutedEnv(t, policy.Options{
		Policies: []policy.Spec{
			{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
			{Name: "public", AllowAnonymous: true},
			{Name: "probe", AllowAnonymous: true},
		},
		Routes: []policy.Route{
			{Methods: []string{"GET"}, Path: "/reports/**", Policy: "admin"},
			{Path: "/reports/**", Policy: "public"},
			// A route naming HEAD decides a HEAD alone (POLICIES.md).
			{Methods: []string{"HEAD"}, Path: "/healthz", Policy: "probe"},
			{Methods: []string{"POST"}, Path: "/healthz", Policy: "public"},
		},
		DefaultPolicy: "admin",
	})
	user := mint(claims(map[string]any{"groups": []string{"users"}}))
	admin := mint(claims(map[string]any{"groups": []string{"admins"}}))
	for _, tt := range []struct {
		name   string
		method string
		uri    string
		token  string
		extra  map[string]string
		status int
	}{
		{"query-anonymous", "POST", "/reports/q3?_method=HEAD", "", nil, 401},
		{"query-user", "POST", "/reports/q3?_method=HEAD", user, nil, 403},
		{"query-lower-case", "POST", "/reports/q3?_method=head", user, nil, 403},
		{"query-admin", "POST", "/reports/q3?_method=HEAD", admin, nil, 200},
		{"header-anonymous", "POST", "/reports/q3", "", map[string]string{"X-HTTP-Method-Override": "HEAD"}, 401},
		{"header-user", "PUT", "/reports/q3", user, map[string]string{"X-HTTP-Method-Override": "HEAD"}, 403},
		// Without the override, POST is the lax route's.
		{"post-anonymous", "POST", "/reports/q3", "", nil, 200},
		// The route chosen for the HEAD names HEAD: decided by it alone.
		{"head-route", "POST", "/healthz?_method=HEAD", "", nil, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, nginxAuthz(tt.method, tt.uri, tt.token, tt.extra))
			if w.Code != tt.status {
				t.Errorf("%s %s %v = %d, want %d", tt.method, tt.uri, tt.extra, w.Code, tt.status)
			}
		})
	}
}
