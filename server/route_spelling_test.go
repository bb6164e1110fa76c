package server

import (
	"net/http/httptest"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/policy/celexpr"
)

// TestAuthzRouteSpellings: a route whose path names a character that is
// not unreserved (a sub-delim, ':', '@', or a non-ASCII character, raw or
// percent-encoded) has a second spelling that routers decode and others do
// not. jwksverify matched only the spelling configured, so the other one
// fell to the lax catch-all while the application's router served the
// strict route's handler. Checked against real routers (a strict route
// "<literal>/*" and a lax "/*"):
//   - Werkzeug 3.1.8 (Flask; Map.bind_to_environ with PATH_INFO as WSGI
//     decodes it) decodes every escape: /%40admin/x, /caf%C3%A9/x,
//     /admin%21/x, /c%2B%2B/x, /v1/users%3Aexport are the strict route's,
//     and a raw /café/x is the route spelled /caf%C3%A9;
//   - find-my-way 9.10.2 (Fastify) decodes with decodeURI: /admin%21/x,
//     /caf%C3%A9/x are the strict route's;
//   - Express 4.22.3 / 5.3.0 and @koa/router 15.7.0 match the raw target
//     (their strict route only for the configured spelling).
//
// The two readings choose other routes, so the request is ambiguous.
func TestAuthzRouteSpellings(t *testing.T) {
	set, err := policy.New(policy.Options{
		Compiler: &celexpr.Compiler{},
		Policies: []policy.Spec{
			{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
			{Name: "public", AllowAnonymous: true},
		},
		Routes: []policy.Route{
			{Path: "/@admin/**", Policy: "admin"},
			{Path: "/café/**", Policy: "admin"},
			{Path: "/caf%C3%A8/**", Policy: "admin"},
			{Path: "/admin!/**", Policy: "admin"},
			{Path: "/c++/**", Policy: "admin"},
			{Path: "/v1/users:export", Policy: "admin"},
			{Path: "/**", Policy: "public"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newPolicyEnvWith(t, nil, func(o *Options) { o.Policies = set })
	for _, tt := range []struct {
		uri  string
		want int
	}{
		{"/@admin/x", 401},          // control: the configured spelling
		{"/café/x", 401},            // control
		{"/caf%C3%A8/x", 401},       // control
		{"/public/x", 200},          // control
		{"/public/%C3%A9/x", 200},   // control: no route names it
		{"/public/a%40b", 200},      // control
		{"/%40admin/x", 401},        // Werkzeug: strict
		{"/caf%C3%A9/x", 401},       // Werkzeug, find-my-way: strict
		{"/caf%c3%a9/x", 401},       // Werkzeug: strict
		{"/caf\xc3\xa8/x", 401},     // Werkzeug (raw UTF-8 through nginx): strict
		{"/admin%21/x", 401},        // Werkzeug, find-my-way: strict
		{"/c%2B%2B/x", 401},         // Werkzeug: strict
		{"/v1/users%3Aexport", 401}, // Werkzeug: strict
	} {
		t.Run(tt.uri, func(t *testing.T) {
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, nginxAuthz("GET", tt.uri, "", nil))
			if w.Code != tt.want {
				t.Errorf("GET %s anonymously: %d, want %d (%s)", tt.uri, w.Code, tt.want, w.Body)
			}
		})
	}
}
