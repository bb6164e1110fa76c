package server

import (
	"testing"
)

// TestUnreadCredential: a credential that a token source does not read as
// a token, but that an application behind the proxy reads as one, was no
// token here: it passed an anonymous route unverified and, beside a
// cookie's valid token, a protected one, while the application acted on
// the forged token. Each shape must be malformed:
//   - Authorization: Bearer <jwt> where the Authorization source has
//     another prefix ("Token ", DRF; "JWT ", Flask-JWT): Spring's
//     BearerTokenResolver, express-oauth2-jwt-bearer and simplejwt read it;
//   - Authorization: <jwt> without a scheme, whether Authorization is a
//     source or not: strings.TrimPrefix(h, "Bearer ") and
//     h.replace("Token ", "") read it (no scheme name holds a dot);
//   - a header source's value without its prefix (X-Access-Token: <jwt>
//     for prefix "Bearer "): req.headers['x-access-token'] reads it.
func TestUnreadCredential(t *testing.T) {
	const forged = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJGT1JHRUQifQ.c2ln"
	valid := mint(claims(map[string]any{"scope": "orders:read"}))
	var (
		tokenPrefix = []TokenSource{{Header: "Authorization", Prefix: "Token "}}
		jwtPrefix   = []TokenSource{{Header: "Authorization", Prefix: "JWT "}}
		twoSpaces   = []TokenSource{{Header: "Authorization", Prefix: "Bearer  "}}
		bearer      = []TokenSource{{Header: "Authorization", Prefix: "Bearer "}}
		accessToken = []TokenSource{{Header: "X-Access-Token", Prefix: "Bearer "}}
		cookieOnly  = []TokenSource{{Cookie: "access_token"}}
		withCookie  = func(s []TokenSource) []TokenSource {
			return append(s[:len(s):len(s)], TokenSource{Cookie: "access_token"})
		}
	)
	const anonymous, protected = "/public/x", "/orders/1"
	for _, tt := range []struct {
		name          string
		sources       []TokenSource
		uri           string
		header, value string
	}{
		{"bearer-beside-token-prefix", tokenPrefix, anonymous, "Authorization", "Bearer " + forged},
		{"bearer-beside-jwt-prefix", jwtPrefix, anonymous, "Authorization", "Bearer " + forged},
		{"bearer-beside-two-space-prefix", twoSpaces, anonymous, "Authorization", "Bearer " + forged},
		{"bearer-beside-token-prefix-and-cookie", withCookie(tokenPrefix), protected, "Authorization", "Bearer " + forged},
		{"bare-in-default-source", nil, anonymous, "Authorization", forged},
		{"bare-in-token-prefix-source", tokenPrefix, anonymous, "Authorization", forged},
		{"bare-in-bearer-source-beside-cookie", withCookie(bearer), protected, "Authorization", forged},
		{"bare-where-authorization-is-no-source", cookieOnly, anonymous, "Authorization", forged},
		{"bare-where-authorization-is-no-source-beside-cookie", cookieOnly, protected, "Authorization", forged},
		{"header-source-bare", accessToken, anonymous, "X-Access-Token", forged},
		{"header-source-other-word", accessToken, anonymous, "X-Access-Token", "JWT " + forged},
		{"header-source-bare-beside-cookie", withCookie(accessToken), protected, "X-Access-Token", forged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = tt.sources })
			r := nginxAuthz("GET", tt.uri, "", map[string]string{tt.header: tt.value})
			if tt.uri == protected {
				r.Header.Set("Cookie", "access_token="+valid)
			}
			d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r))
			if d.Allowed() || d.Class != "malformed" {
				t.Errorf("Decide() allowed %v, class %q; want a malformed refusal: %s: %s reaches the application unverified", d.Allowed(), d.Class, tt.header, tt.value)
			}
		})
	}
	// Controls: a credential a source reads is verified, and other
	// schemes in Authorization hold no token, whatever the sources.
	for _, c := range []struct {
		name          string
		sources       []TokenSource
		uri           string
		header, value string
		allowed       bool
	}{
		{"bearer-prefix", bearer, protected, "Authorization", "Bearer " + valid, true},
		{"bearer-prefix-lower-case", []TokenSource{{Header: "Authorization", Prefix: "bearer "}}, protected, "Authorization", "Bearer " + valid, true},
		{"bearer-prefix-without-space", []TokenSource{{Header: "Authorization", Prefix: "Bearer"}}, protected, "Authorization", "Bearer " + valid, true},
		{"empty-prefix-reads-the-whole-value", []TokenSource{{Header: "Authorization"}}, protected, "Authorization", "Bearer " + valid, false},
		{"header-source-prefixed", accessToken, protected, "X-Access-Token", "Bearer " + valid, true},
		{"basic", nil, anonymous, "Authorization", "Basic dXNlcjpwYXNz", true},
		{"negotiate", nil, anonymous, "Authorization", "Negotiate YIIC", true},
		{"aws4", nil, anonymous, "Authorization", "AWS4-HMAC-SHA256 Credential=a/b.c", true},
		{"basic-where-authorization-is-no-source", cookieOnly, anonymous, "Authorization", "Basic dXNlcjpwYXNz", true},
		{"aws4-where-authorization-is-no-source", cookieOnly, anonymous, "Authorization", "AWS4-HMAC-SHA256 Credential=a/b.c", true},
	} {
		t.Run("control-"+c.name, func(t *testing.T) {
			e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = c.sources })
			r := nginxAuthz("GET", c.uri, "", map[string]string{c.header: c.value})
			if d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r)); d.Allowed() != c.allowed {
				t.Errorf("Decide() allowed %v class %q, want allowed %v", d.Allowed(), d.Class, c.allowed)
			}
		})
	}
}
