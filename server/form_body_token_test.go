package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestQueryTokenBesideFormBody: RFC 6750 names the same parameter,
// access_token, in the query (§2.3) and in a form body (§2.2), and the
// common readers of "the parameter access_token" read the body's first:
// Go's Request.FormValue (go-oauth2/oauth2's BearerAuth), Rack's params,
// oauthlib. A forward-auth call never sees the body, so with a query
// source a request ?access_token=<valid> whose form body held
// access_token=<forged> was allowed on the valid one while the application
// read the forged one. A query token in a request whose Content-Type is a
// form, or in a POST without one (Rack reads such a body as a form), is
// ambiguous.
func TestQueryTokenBesideFormBody(t *testing.T) {
	// The premise, on the application's side: net/http reads the body's
	// access_token before the query's.
	app := httptest.NewRequest(http.MethodPost, "/orders/1?access_token=GOOD", strings.NewReader("access_token=FORGED"))
	app.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if got := app.FormValue("access_token"); got != "FORGED" {
		t.Fatalf("net/http FormValue = %q, want the body's FORGED", got)
	}
	valid := mint(claims(map[string]any{"scope": "orders:write"}))
	querySources := []TokenSource{{Header: "Authorization", Prefix: "Bearer "}, {Query: "access_token"}}
	for _, tt := range []struct {
		name, method, contentType string
		bearer                    bool // the token in Authorization, not the query
		allowed                   bool
	}{
		{"post-urlencoded", "POST", "application/x-www-form-urlencoded", false, false},
		{"put-urlencoded", "PUT", "application/x-www-form-urlencoded", false, false},
		{"patch-urlencoded", "PATCH", "application/x-www-form-urlencoded", false, false},
		{"post-urlencoded-any-case-and-params", "POST", "Application/X-WWW-Form-Urlencoded; charset=UTF-8", false, false},
		{"post-multipart", "POST", "multipart/form-data; boundary=x", false, false},
		{"post-no-content-type", "POST", "", false, false},
		// Controls: a body no form parser reads, no body, the token in a
		// header (the application's form has nothing to do with it).
		{"post-json", "POST", "application/json", false, true},
		{"get", "GET", "", false, true},
		{"delete-no-content-type", "DELETE", "", false, true},
		{"bearer-beside-form", "POST", "application/x-www-form-urlencoded", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = querySources })
			uri, tok := "/orders/1?access_token="+valid, ""
			if tt.bearer {
				uri, tok = "/orders/1", valid
			}
			r := nginxAuthz(tt.method, uri, tok, map[string]string{"Content-Type": tt.contentType})
			d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r))
			if d.Allowed() != tt.allowed || (!tt.allowed && d.Class != "malformed") {
				t.Errorf("%s %s with Content-Type %q: Decide() allowed %v, class %q; want allowed %v (else malformed)",
					tt.method, uri[:min(len(uri), 30)], tt.contentType, d.Allowed(), d.Class, tt.allowed)
			}
		})
	}
}
