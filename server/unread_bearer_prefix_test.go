package server

import (
	"testing"
)

// TestUnreadBearerBesideOtherPrefix: Authorization is a token source, but
// with a prefix other than Bearer ("Token ", DRF-style; "JWT ", Flask-JWT):
// an Authorization: Bearer <forged> is then no credential here, exactly as
// when Authorization is no source at all (errUnreadBearer), so an
// anonymous route passed it unverified, and beside a cookie's valid token
// a protected route allowed it, while an application that reads Bearer
// credentials (Spring's BearerTokenResolver, express-oauth2-jwt-bearer,
// DRF's simplejwt next to TokenAuthentication) got the forged one. Each
// must be malformed.
func TestUnreadBearerBesideOtherPrefix(t *testing.T) {
	const forged = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJGT1JHRUQifQ.c2ln"
	valid := mint(claims(map[string]any{"scope": "orders:read"}))
	for _, tt := range []struct {
		name    string
		sources []TokenSource
		uri     string
		cookie  string
		authz   string
	}{
		{"token-prefix-anonymous-route", []TokenSource{{Header: "Authorization", Prefix: "Token "}}, "/public/x", "", "Bearer " + forged},
		{"jwt-prefix-anonymous-route", []TokenSource{{Header: "Authorization", Prefix: "JWT "}}, "/public/x", "", "Bearer " + forged},
		{"bearer-two-spaces-prefix-anonymous-route", []TokenSource{{Header: "Authorization", Prefix: "Bearer  "}}, "/public/x", "", "Bearer " + forged},
		{"token-prefix-beside-valid-cookie", []TokenSource{{Header: "Authorization", Prefix: "Token "}, {Cookie: "access_token"}}, "/orders/1", "access_token=" + valid, "Bearer " + forged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = tt.sources })
			r := nginxAuthz("GET", tt.uri, "", nil)
			r.Header.Set("Authorization", tt.authz)
			if tt.cookie != "" {
				r.Header.Set("Cookie", tt.cookie)
			}
			d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r))
			if d.Allowed() || d.Class != "malformed" {
				t.Errorf("Decide() allowed %v, class %q; want a malformed refusal: the application reads Bearer %s, which nothing verified", d.Allowed(), d.Class, forged)
			}
		})
	}
	// Controls: a source whose prefix reads Bearer credentials verifies them.
	for _, prefix := range []string{"Bearer ", "bearer ", "Bearer", ""} {
		e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = []TokenSource{{Header: "Authorization", Prefix: prefix}} })
		r := nginxAuthz("GET", "/orders/1", "", nil)
		r.Header.Set("Authorization", "Bearer "+valid)
		d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r))
		if want := prefix != ""; d.Allowed() != want {
			t.Errorf("prefix %q: Decide() allowed %v class %q, want allowed %v", prefix, d.Allowed(), d.Class, want)
		}
	}
}
