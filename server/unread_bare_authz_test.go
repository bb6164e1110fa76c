package server

import (
	"testing"
)

// TestAuthorizationSourceBareToken: the Authorization source's value
// without its prefix and without any scheme, a bare JWS
// (Authorization: <jwt>), was no token here, as X-Access-Token: <jwt> was
// before TestHeaderSourceValueWithoutPrefix: it passed an anonymous route
// unverified and, beside a cookie's valid token, a protected one, while an
// application that removes the prefix when present
// (strings.TrimPrefix(h, "Bearer "), h.replace("Token ", "")) reads the
// forged token. No auth scheme holds a dot: such a value is malformed.
func TestAuthorizationSourceBareToken(t *testing.T) {
	const forged = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJGT1JHRUQifQ.c2ln"
	valid := mint(claims(map[string]any{"scope": "orders:read"}))
	for _, tt := range []struct {
		name    string
		sources []TokenSource
		uri     string
		cookie  string
	}{
		{"default-source-anonymous-route", nil, "/public/x", ""},
		{"token-prefix-anonymous-route", []TokenSource{{Header: "Authorization", Prefix: "Token "}}, "/public/x", ""},
		{"bearer-beside-valid-cookie", []TokenSource{{Header: "Authorization", Prefix: "Bearer "}, {Cookie: "access_token"}}, "/orders/1", "access_token=" + valid},
		// Authorization is no source: the token an application taking the
		// header's value reads is not the cookie's that was verified.
		{"no-authorization-source-anonymous-route", []TokenSource{{Cookie: "access_token"}}, "/public/x", ""},
		{"no-authorization-source-beside-valid-cookie", []TokenSource{{Cookie: "access_token"}}, "/orders/1", "access_token=" + valid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = tt.sources })
			r := nginxAuthz("GET", tt.uri, "", nil)
			r.Header.Set("Authorization", forged)
			if tt.cookie != "" {
				r.Header.Set("Cookie", tt.cookie)
			}
			d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r))
			if d.Allowed() || d.Class != "malformed" {
				t.Errorf("Decide() allowed %v, class %q; want a malformed refusal: Authorization: %s reaches the application unverified", d.Allowed(), d.Class, forged)
			}
		})
	}
	// Controls: other schemes still hold no token, whether Authorization
	// is a source or not.
	for _, sources := range [][]TokenSource{nil, {{Cookie: "access_token"}}} {
		for _, authz := range []string{"Basic dXNlcjpwYXNz", "Negotiate YIIC", "AWS4-HMAC-SHA256 Credential=a/b.c"} {
			e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = sources })
			r := nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": authz})
			if d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r)); !d.Allowed() {
				t.Errorf("sources %v, Authorization: %s on an anonymous route: class %q, want allowed", sources, authz, d.Class)
			}
		}
	}
}
