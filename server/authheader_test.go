package server

import (
	"testing"
)

// TestAuthorizationReadOtherwise: an Authorization value (or values) that
// jwksverify reads as no token, so that an anonymous route passes it, while
// an application's own reader finds a token in the same bytes. Each row
// names the reader and what it returns; each must be malformed (or
// ambiguous), never "no token".
func TestAuthorizationReadOtherwise(t *testing.T) {
	const forged = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJGT1JHRUQifQ.c2ln"
	for _, tt := range []struct {
		name    string
		sources []TokenSource
		values  []string
		reader  string // what an application reads
	}{
		// go-chi/jwtauth up to v5.3.2 (TokenFromHeader: len > 7 &&
		// strings.ToUpper(bearer[0:6]) == "BEARER", then bearer[7:]) skips
		// the 7th byte whatever it is: these return forged.
		{"jwtauth-bearer-letter", nil, []string{"BearerX" + forged}, "go-chi/jwtauth v5.3.2: " + forged},
		{"jwtauth-bearer-dash", nil, []string{"Bearer-" + forged}, "go-chi/jwtauth v5.3.2: " + forged},
		{"jwtauth-bearer-dot", nil, []string{"bearer." + forged}, "go-chi/jwtauth v5.3.2: " + forged},
		{"jwtauth-bearer-underscore", nil, []string{"BEARER_" + forged}, "go-chi/jwtauth v5.3.2: " + forged},
		// A header source with its own prefix: Django REST framework 3.14.0's
		// TokenAuthentication (get_authorization_header(request).split(),
		// keyword "Token"; run on Django 3.2.25 over a WSGI environ) reads
		// forged after a tab; Python 3.11's str.split() of the Latin-1
		// string WSGI hands over also after 0xA0, before or after the word.
		{"drf-token-tab", []TokenSource{{Header: "Authorization", Prefix: "Token "}}, []string{"Token\t" + forged}, "DRF 3.14.0 TokenAuthentication: " + forged},
		{"split-x-token-tab", []TokenSource{{Header: "X-Api-Token", Prefix: "Token "}}, []string{"Token\t" + forged}, "str.split(): " + forged},
		{"split-x-token-nbsp", []TokenSource{{Header: "X-Api-Token", Prefix: "Token "}}, []string{"Token\xa0" + forged}, "str.split() over Latin-1: " + forged},
		// A header source of its own with the Bearer prefix is held to
		// "Bearer <token68>" as Authorization is: after two spaces a reader
		// splitting on one space reads an empty token.
		{"x-header-bearer-two-spaces", []TokenSource{{Header: "X-Api-Token", Prefix: "Bearer "}}, []string{"Bearer  " + forged}, "split(' ', 1): an empty token, then the rest"},
		{"split-x-token-leading-space", []TokenSource{{Header: "X-Api-Token", Prefix: "Token "}}, []string{"\xa0Token " + forged}, "str.split() over Latin-1: " + forged},
		// Authorization not a token source, two DPoP lines: node:http keeps
		// the first authorization line (a repeated one is discarded) and
		// express-oauth2-jwt-bearer 1.10.0's getToken (/^(Bearer|DPoP) (.+)$/i)
		// reads forged; net/http's Header.Get reads the first line too.
		{"dpop-twice-cookie-source", []TokenSource{{Cookie: "access_token"}}, []string{"DPoP " + forged, "DPoP " + forged}, "express-oauth2-jwt-bearer 1.10.0 on node 20: " + forged},
		// A scheme after bytes an application skips as white space
		// (trimAppSpace): Python's str.strip() of the Latin-1 string WSGI
		// hands over removes 0xA0 and 0x85, and '!' is Envoy's stand-in for
		// a byte that is not UTF-8 (0xA0 at the application); a reader of
		// /^(Bearer|DPoP) (.+)$/i then reads forged. Neither the default
		// Bearer source nor embedsBearer sees a DPoP one, nor a Bearer one
		// where Authorization is no source.
		{"nbsp-dpop", nil, []string{"\xa0DPoP " + forged}, "str.strip() over Latin-1, then a DPoP reader: " + forged},
		{"nel-dpop", nil, []string{"\x85DPoP " + forged}, "str.strip() over Latin-1, then a DPoP reader: " + forged},
		{"envoy-replaced-byte-dpop", nil, []string{"!DPoP " + forged}, "Envoy's '!' for 0xA0, str.strip(), then a DPoP reader: " + forged},
		{"nbsp-bearer-cookie-source", []TokenSource{{Cookie: "access_token"}}, []string{"\xa0Bearer " + forged}, "str.strip() over Latin-1, then a Bearer reader: " + forged},
		// A prefix that is no word and a space ("Token="): after 0xA0 it is
		// not the source's prefix here, and an opaque token (no dot) is no
		// bare token either; str.strip() and the prefix cut read it.
		{"nbsp-token-equals-opaque", []TokenSource{{Header: "Authorization", Prefix: "Token="}}, []string{"\xa0Token=0123456789abcdef"}, "str.strip() over Latin-1, then the prefix cut: 0123456789abcdef"},
		{"dpop-and-basic-cookie-source", []TokenSource{{Cookie: "access_token"}}, []string{"DPoP " + forged, "Basic dXNlcjpwYXNz"}, "express-oauth2-jwt-bearer 1.10.0 on node 20: " + forged},
		// Two Authorization lines Envoy joined with ',' (its CheckRequest
		// headers map): an application reading the second line reads
		// forged. No check but mergedCredential sees these: no space after
		// Bearer for embedsBearer, DPoP not at the start for badScheme.
		{"merged-basic-then-dpop", nil, []string{"Basic dXNlcjpwYXNz,DPoP " + forged}, "the second of two joined lines, a DPoP reader: " + forged},
		{"merged-basic-then-bearer-colon", nil, []string{"Basic dXNlcjpwYXNz,Bearer:" + forged}, "the second of two joined lines, a Bearer reader skipping ':': " + forged},
		{"merged-basic-then-bearer-envoy-byte", nil, []string{"Basic dXNlcjpwYXNz, Bearer!" + forged}, "the second of two joined lines, Envoy's '!' for 0xA0, str.split(): " + forged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolicyEnvWith(t, nil, func(o *Options) {
				if tt.sources != nil {
					o.TokenSources = tt.sources
				}
			})
			r := nginxAuthz("GET", "/public/x", "", nil)
			hd := "Authorization"
			if len(tt.sources) == 1 && tt.sources[0].Header != "" {
				hd = tt.sources[0].Header
			}
			for _, v := range tt.values {
				r.Header.Add(hd, v)
			}
			if cred := e.srv.extract(forwardAuthCall(e.srv, r)); cred.missing {
				t.Errorf("extract() found no token (err %v); %s", cred.err, tt.reader)
			}
			d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r))
			if d.Allowed() || d.Class != "malformed" {
				t.Errorf("Decide() allowed %v, class %q; want a malformed refusal (%s)", d.Allowed(), d.Class, tt.reader)
			}
		})
	}
}

// TestPrefixOnlyUnicodeFolds: a header source's value that begins with its
// prefix only to Unicode case folding (strings.EqualFold, Java's
// equalsIgnoreCase, .NET's OrdinalIgnoreCase) holds no token here, where
// the prefix is compared ignoring ASCII case only, and a token to an
// application comparing its scheme that way: an anonymous route passed it
// as a request without one. It is malformed, as a query or cookie name
// only Unicode folding reads as a source's is.
func TestPrefixOnlyUnicodeFolds(t *testing.T) {
	const forged = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJGT1JHRUQifQ.c2ln"
	for _, tt := range []struct {
		name   string
		source TokenSource
		value  string
	}{
		// "JÉTON " was "Jéton " to strings.EqualFold before the ASCII fold.
		{"non-ascii-prefix-other-case", TokenSource{Header: "Authorization", Prefix: "Jéton "}, "JÉTON " + forged},
		{"non-ascii-prefix-x-header", TokenSource{Header: "X-Api-Token", Prefix: "Jéton "}, "JÉTON " + forged},
		{"kelvin-token", TokenSource{Header: "Authorization", Prefix: "Token "}, "To\u212aen " + forged},
		{"long-s-session", TokenSource{Header: "Authorization", Prefix: "Session "}, "Se\u017fsion " + forged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = []TokenSource{tt.source} })
			r := nginxAuthz("GET", "/public/x", "", nil)
			r.Header.Add(tt.source.Header, tt.value)
			if cred := e.srv.extract(forwardAuthCall(e.srv, r)); cred.missing {
				t.Errorf("extract() found no token (err %v) in %q", cred.err, tt.value)
			}
			d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r))
			if d.Allowed() || d.Class != "malformed" {
				t.Errorf("Decide() allowed %v, class %q; want a malformed refusal", d.Allowed(), d.Class)
			}
		})
	}
	// The prefix as written, in any ASCII case, still finds the token.
	e := newPolicyEnvWith(t, nil, func(o *Options) { o.TokenSources = []TokenSource{{Header: "Authorization", Prefix: "Jéton "}} })
	r := nginxAuthz("GET", "/public/x", "", nil)
	r.Header.Add("Authorization", "jéton "+forged)
	if cred := e.srv.extract(forwardAuthCall(e.srv, r)); cred.missing || cred.err != nil {
		t.Errorf("extract() of the prefix as written: missing %v, err %v", cred.missing, cred.err)
	}
}
