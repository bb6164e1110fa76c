package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
)

// TestHeadDecidedAsGet: Express, Flask, Rails and Go's ServeMux run a HEAD
// request with the GET handler (its side effects, its headers), so a HEAD
// is also decided as GET, as a method override is: with a strict route for
// GET and a lax one for every other method, HEAD passed under the lax one.
func TestHeadDecidedAsGet(t *testing.T) {
	e := newRoutedEnv(t, policy.Options{
		Policies: []policy.Spec{
			{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
			{Name: "public", AllowAnonymous: true},
			{Name: "allow"},
		},
		Routes: []policy.Route{
			{Methods: []string{"GET"}, Path: "/reports/**", Policy: "admin"},
			{Path: "/reports/**", Policy: "public"},
			{Methods: []string{"GET", "HEAD"}, Path: "/docs/**", Policy: "allow"},
		},
		DefaultPolicy: "admin",
	})
	user := mint(claims(map[string]any{"groups": []string{"users"}}))
	admin := mint(claims(map[string]any{"groups": []string{"admins"}}))
	for _, tt := range []struct {
		name   string
		r      *http.Request
		status int
	}{
		{"get-anonymous", nginxAuthz("GET", "/reports/q3", "", nil), 401},
		{"head-anonymous", nginxAuthz("HEAD", "/reports/q3", "", nil), 401},
		{"head-user", nginxAuthz("HEAD", "/reports/q3", user, nil), 403},
		{"head-admin", nginxAuthz("HEAD", "/reports/q3", admin, nil), 200},
		{"post-anonymous", nginxAuthz("POST", "/reports/q3", "", nil), 200},
		{"head-lower-case", nginxAuthz("head", "/reports/q3", user, nil), 403},
		// A route that lists both: nothing changes.
		{"head-docs-user", nginxAuthz("HEAD", "/docs/a", user, nil), 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, tt.r)
			if w.Code != tt.status {
				t.Errorf("%s %s = %d, want %d", tt.r.Header.Get("X-Original-Method"), tt.r.Header.Get("X-Original-Uri"), w.Code, tt.status)
			}
		})
	}
}
