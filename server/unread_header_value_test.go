package server

import (
	"testing"
)

// TestHeaderSourceValueWithoutPrefix: a header token source other than
// Authorization exists only to carry the token, but a value of it that
// does not start with the source's prefix was no token here: with
// {header: X-Access-Token, prefix: "Bearer "}, X-Access-Token: <forged>
// passed an anonymous route unverified and, beside a cookie's valid token,
// a protected one, while the usual reader of such a header
// (req.headers['x-access-token'], "Bearer " removed when present) hands
// the application the forged token. Each must be malformed.
func TestHeaderSourceValueWithoutPrefix(t *testing.T) {
	const forged = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJGT1JHRUQifQ.c2ln"
	valid := mint(claims(map[string]any{"scope": "orders:read"}))
	for _, tt := range []struct {
		name    string
		sources []TokenSource
		uri     string
		cookie  string
		value   string
	}{
		{"bare-token-anonymous-route", []TokenSource{{Header: "X-Access-Token", Prefix: "Bearer "}}, "/public/x", "", forged},
		{"other-word-anonymous-route", []TokenSource{{Header: "X-Access-Token", Prefix: "Bearer "}}, "/public/x", "", "JWT " + forged},
		{"bare-token-beside-valid-cookie", []TokenSource{{Header: "X-Access-Token", Prefix: "Bearer "}, {Cookie: "access_token"}}, "/orders/1", "access_token=" + valid, forged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = tt.sources })
			r := nginxAuthz("GET", tt.uri, "", nil)
			r.Header.Set("X-Access-Token", tt.value)
			if tt.cookie != "" {
				r.Header.Set("Cookie", tt.cookie)
			}
			d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r))
			if d.Allowed() || d.Class != "malformed" {
				t.Errorf("Decide() allowed %v, class %q; want a malformed refusal: X-Access-Token: %s reaches the application unverified", d.Allowed(), d.Class, tt.value)
			}
		})
	}
	// Control: the prefixed value is verified.
	e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = []TokenSource{{Header: "X-Access-Token", Prefix: "Bearer "}} })
	r := nginxAuthz("GET", "/orders/1", "", map[string]string{"X-Access-Token": "Bearer " + valid})
	if d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r)); !d.Allowed() {
		t.Errorf("control: Decide() class %q, want allowed", d.Class)
	}
}
