package server

import (
	"testing"
)

// TestBearerInsideAnotherCredential: Laravel's Request::bearerToken() reads
// the token after the last "Bearer " (any case) anywhere in Authorization,
// up to a ','; PHP's common preg_match('/Bearer\s(\S+)/') reads the first
// one anywhere. "Basic dXNlcjpwYXNz Bearer <jwt>" or "Token Bearer <jwt>"
// held no token here: an anonymous route let the forged token through, and
// beside a cookie source's valid token it reached the application, which
// read it instead of the one verified. Each is malformed.
func TestBearerInsideAnotherCredential(t *testing.T) {
	const forged = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJGT1JHRUQifQ.c2ln"
	valid := mint(claims(map[string]any{"scope": "orders:read"}))
	bearerAndCookie := []TokenSource{{Header: "Authorization", Prefix: "Bearer "}, {Cookie: "access_token"}}
	cookieOnly := []TokenSource{{Cookie: "access_token"}}
	const anonymous, protected = "/public/x", "/orders/1"
	for _, tt := range []struct {
		name    string
		sources []TokenSource
		uri     string
		value   string
	}{
		{"after-basic-anonymous", nil, anonymous, "Basic dXNlcjpwYXNz Bearer " + forged},
		{"after-other-word-anonymous", nil, anonymous, "Token Bearer " + forged},
		{"glued-to-a-word-anonymous", nil, anonymous, "XBearer " + forged},
		{"lower-case-anonymous", nil, anonymous, "Basic x bearer " + forged},
		{"tab-anonymous", nil, anonymous, "Basic x Bearer\t" + forged},
		{"after-basic-beside-cookie", bearerAndCookie, protected, "Basic dXNlcjpwYXNz Bearer " + forged},
		{"no-authorization-source-beside-cookie", cookieOnly, protected, "Basic dXNlcjpwYXNz Bearer " + forged},
		{"no-authorization-source-anonymous", cookieOnly, anonymous, "Custom Bearer " + forged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = tt.sources })
			r := nginxAuthz("GET", tt.uri, "", map[string]string{"Authorization": tt.value})
			if tt.uri == protected {
				r.Header.Set("Cookie", "access_token="+valid)
			}
			d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r))
			if d.Allowed() || d.Class != "malformed" {
				t.Errorf("Decide() allowed %v, class %q; want a malformed refusal: Authorization: %s reaches the application unverified", d.Allowed(), d.Class, tt.value)
			}
		})
	}
	// Controls: other schemes and a lone Bearer credential are unchanged.
	for _, c := range []struct {
		name, uri, value string
		allowed          bool
	}{
		{"bearer", protected, "Bearer " + valid, true},
		{"basic", anonymous, "Basic dXNlcjpwYXNz", true},
		{"aws4", anonymous, "AWS4-HMAC-SHA256 Credential=a/b.c, SignedHeaders=host, Signature=d", true},
		{"bearer-word-in-a-param", anonymous, "Custom realm=bearer", true},
		{"bearerish-word", anonymous, "Custom Bearerish x", true},
	} {
		t.Run("control-"+c.name, func(t *testing.T) {
			e := newPolicyEnvWith(t, nil, nil)
			r := nginxAuthz("GET", c.uri, "", map[string]string{"Authorization": c.value})
			if d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r)); d.Allowed() != c.allowed {
				t.Errorf("Decide() allowed %v class %q, want allowed %v", d.Allowed(), d.Class, c.allowed)
			}
		})
	}
}
