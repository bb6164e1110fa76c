package server

import (
	"net/http/httptest"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
)

// TestFormatSuffixDecidedAsItsPath: Rails gives every route an optional
// format suffix ((.:format): /admin.json runs the /admin action, as
// application/json), so a path whose last segment ends in ".ext" is also
// decided as the path without it when a route matches that path: with a
// strict /admin/** and a lax default, GET /admin.json passed anonymously
// under the default and ran the admin action. A path whose stripped
// reading no route matches, or one with the same policy, is decided as
// before.
func TestFormatSuffixDecidedAsItsPath(t *testing.T) {
	e := newRoutedEnv(t, policy.Options{
		Policies: []policy.Spec{
			{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
			{Name: "public", AllowAnonymous: true},
		},
		Routes: []policy.Route{
			{Path: "/admin/**", Policy: "admin"},
			{Path: "/reports/export", Policy: "admin"},
			{Path: "/reports/*", Policy: "public"},
		},
		DefaultPolicy: "public",
	})
	user := mint(claims(map[string]any{"groups": []string{"users"}}))
	admin := mint(claims(map[string]any{"groups": []string{"admins"}}))
	for _, tt := range []struct {
		name   string
		method string
		uri    string
		token  string
		status int
	}{
		{"admin-json-anonymous", "GET", "/admin.json", "", 401},
		{"admin-json-user", "GET", "/admin.json", user, 403},
		{"admin-json-admin", "GET", "/admin.json", admin, 200},
		{"admin-xml-query", "GET", "/admin.xml?page=2", "", 401},
		{"admin-json-trailing-slash", "GET", "/admin.json/", "", 401}, // Rails ignores the slash
		{"export-csv-anonymous", "GET", "/reports/export.csv", "", 401},
		{"export-csv-override", "GET", "/reports/export.csv?_method=DELETE", user, 403},
		// The stripped reading matches no route, or one of the same policy.
		{"favicon", "GET", "/favicon.ico", "", 200},
		{"report-pdf", "GET", "/reports/q3.pdf", "", 200},
		{"admin-dot-only", "GET", "/admin.", "", 200},
		{"dotfile", "GET", "/.admin", "", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, nginxAuthz(tt.method, tt.uri, tt.token, nil))
			if w.Code != tt.status {
				t.Errorf("%s %s = %d, want %d", tt.method, tt.uri, w.Code, tt.status)
			}
		})
	}
}
