package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// tokenSourceEnv is a server behind nginx with one source of each kind.
func tokenSourceEnv(t testing.TB) *env {
	return newEnv(t, envConfig{proxy: request.Nginx, sources: []TokenSource{
		{Header: "X-Token"},
		{Cookie: "session"},
		{Query: "access_token"},
		{Header: "Authorization", Prefix: "Bearer "},
	}})
}

// nginxRequest is an auth subrequest of nginx for the original URI uri.
func nginxRequest(uri string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
	r.Header.Set("X-Original-Method", "GET")
	r.Header.Set("X-Original-URI", uri)
	r.Header.Set("X-Original-Host", "app.example.com")
	return r
}

// TestTokenSourceForms: exactly one value in every form an upstream could
// read is a token; anything else is missing or ambiguous (malformed).
func TestTokenSourceForms(t *testing.T) {
	e := tokenSourceEnv(t)
	tests := []struct {
		name      string
		uri       string
		setup     func(r *http.Request)
		wantToken string
		wantState tokenState
	}{
		{name: "query-from-original-uri", uri: "/app?a=1&access_token=GOOD", wantToken: "GOOD"},
		{name: "query-escaped-value", uri: "/app?access_token=a%2Eb", wantToken: "a.b"},
		// The request's own query and other presets' headers are a client's.
		{name: "own-query-not-read", uri: "/app", setup: func(r *http.Request) { r.URL.RawQuery = "access_token=GOOD" }, wantState: tokenMissing},
		{name: "forwarded-uri-not-read", uri: "/app?access_token=FORGED", setup: func(r *http.Request) {
			r.Header.Set("X-Forwarded-Uri", "/?access_token=GOOD")
		}, wantToken: "FORGED"},
		{name: "no-original-uri", uri: "", setup: func(r *http.Request) {
			r.Header.Del("X-Original-URI")
			r.Header.Set("X-Forwarded-Uri", "/?access_token=GOOD")
		}, wantState: tokenMissing},
		{name: "query-twice", uri: "/?access_token=GOOD&access_token=GOOD", wantState: tokenAmbiguous},
		{name: "query-semicolon-hides-second", uri: "/?access_token=GOOD&access_token=FORGED;", wantState: tokenAmbiguous},
		{name: "query-semicolon-split", uri: "/?access_token=GOOD;access_token=FORGED", wantState: tokenAmbiguous},
		{name: "query-semicolon-in-value", uri: "/?access_token=GOOD;", wantState: tokenAmbiguous},
		{name: "query-empty-first", uri: "/?access_token=&access_token=FORGED", wantState: tokenAmbiguous},
		{name: "query-bare-name", uri: "/?access_token&access_token=FORGED", wantState: tokenAmbiguous},
		{name: "query-escaped-name", uri: "/?access_token=GOOD&access%5Ftoken=FORGED", wantState: tokenAmbiguous},
		{name: "query-other-case", uri: "/?access_token=GOOD&ACCESS_TOKEN=FORGED", wantState: tokenAmbiguous},
		{name: "query-plus-name", uri: "/?access_token=GOOD&access_token+=FORGED", wantState: tokenMissing + 99},
		// PHP reads these names as access_token ($_GET mangles ' ', '.'
		// and an unclosed '[' to '_', and reads x[...] as the array x).
		{name: "query-php-dot", uri: "/?access_token=GOOD&access.token=FORGED", wantState: tokenAmbiguous},
		{name: "query-php-escaped-dot", uri: "/?access_token=GOOD&access%2Etoken=FORGED", wantState: tokenAmbiguous},
		{name: "query-php-space", uri: "/?access_token=GOOD&access+token=FORGED", wantState: tokenAmbiguous},
		{name: "query-php-leading-space", uri: "/?access_token=GOOD&%20access_token=FORGED", wantState: tokenAmbiguous},
		{name: "query-php-bracket", uri: "/?access_token=GOOD&access[token=FORGED", wantState: tokenAmbiguous},
		{name: "query-php-array", uri: "/?access_token=GOOD&access_token[]=FORGED", wantState: tokenAmbiguous},
		{name: "query-php-other-name", uri: "/?access_token=GOOD&access.tokens=x", wantToken: "GOOD"},
		{name: "query-php-name-alone", uri: "/?access.token=FORGED", wantState: tokenAmbiguous},
		{name: "cookie-php-dot", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", "session=GOOD; sess.ion=x") }, wantToken: "GOOD"},
		{name: "query-bad-escape", uri: "/?access_token=GO%zzOD", wantState: tokenAmbiguous},
		{name: "query-empty", uri: "/?access_token=", wantState: tokenMissing},
		{name: "cookie", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", "theme=dark; session=GOOD") }, wantToken: "GOOD"},
		{name: "cookie-space-after-equals", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", "session= GOOD") }, wantState: tokenAmbiguous}, // net/http reads " GOOD"
		{name: "cookie-space-before-semicolon", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", "session=GOOD ; x=1") }, wantToken: "GOOD"},
		{name: "cookie-quoted", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", `session="GOOD"`) }, wantToken: "GOOD"},
		{name: "cookie-empty-first", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", "session=; session=FORGED") }, wantState: tokenAmbiguous},
		{name: "cookie-twice", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", "session=GOOD; session=FORGED") }, wantState: tokenAmbiguous},
		{name: "cookie-two-headers", uri: "/", setup: func(r *http.Request) {
			r.Header.Add("Cookie", "session=GOOD")
			r.Header.Add("Cookie", "session=FORGED")
		}, wantState: tokenAmbiguous},
		{name: "cookie-value-net-http-drops", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", `session=GOOD; session=FOR"GED`) }, wantState: tokenAmbiguous},
		{name: "cookie-escaped-name", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", "session=GOOD; sess%69on=FORGED") }, wantState: tokenAmbiguous},
		{name: "cookie-spaced-name", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", "session=GOOD;  session =FORGED") }, wantState: tokenAmbiguous},
		{name: "cookie-empty", uri: "/", setup: func(r *http.Request) { r.Header.Set("Cookie", "session=") }, wantState: tokenMissing},
		{name: "header", uri: "/", setup: func(r *http.Request) { r.Header.Set("X-Token", "GOOD") }, wantToken: "GOOD"},
		// CGI and FastCGI (PHP behind Caddy's php_fastcgi, WSGI) read
		// X-Token and X_Token as one HTTP_X_TOKEN.
		{name: "header-underscore-twin", uri: "/", setup: func(r *http.Request) {
			r.Header.Set("X-Token", "GOOD")
			r.Header["X_token"] = []string{"FORGED"}
		}, wantState: tokenAmbiguous},
		{name: "header-underscore-alone", uri: "/", setup: func(r *http.Request) { r.Header["X_token"] = []string{"FORGED"} }, wantState: tokenAmbiguous},
		{name: "header-twice", uri: "/", setup: func(r *http.Request) {
			r.Header.Add("X-Token", "GOOD")
			r.Header.Add("X-Token", "FORGED")
		}, wantState: tokenAmbiguous},
		{name: "bearer", uri: "/", setup: func(r *http.Request) { r.Header.Set("Authorization", "Bearer GOOD") }, wantToken: "GOOD"},
		// RFC 6750 §2: one method per request. Another source holding
		// another token is ambiguous: the upstream may read that one.
		{name: "header-and-query", uri: "/?access_token=FORGED", setup: func(r *http.Request) { r.Header.Set("X-Token", "GOOD") }, wantState: tokenAmbiguous},
		{name: "cookie-and-bearer", uri: "/", setup: func(r *http.Request) {
			r.Header.Set("Cookie", "session=GOOD")
			r.Header.Set("Authorization", "Bearer FORGED")
		}, wantState: tokenAmbiguous},
		{name: "query-and-bearer", uri: "/?access_token=GOOD", setup: func(r *http.Request) { r.Header.Set("Authorization", "Bearer FORGED") }, wantState: tokenAmbiguous},
		{name: "header-and-repeated-query", uri: "/?access_token=GOOD&access_token=FORGED", setup: func(r *http.Request) { r.Header.Set("X-Token", "GOOD") }, wantState: tokenAmbiguous},
		{name: "same-token-twice", uri: "/?access_token=GOOD", setup: func(r *http.Request) {
			r.Header.Set("Cookie", "session=GOOD")
			r.Header.Set("Authorization", "Bearer GOOD")
		}, wantToken: "GOOD"},
		{name: "other-scheme-in-later-source", uri: "/", setup: func(r *http.Request) {
			r.Header.Set("X-Token", "GOOD")
			r.Header.Set("Authorization", "Basic dTpw")
		}, wantToken: "GOOD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.wantState == tokenMissing+99 {
				// '+' decodes to a space: "access_token " is another name.
				tt.wantState, tt.wantToken = tokenFound, "GOOD"
			}
			r := nginxRequest(tt.uri)
			if tt.setup != nil {
				tt.setup(r)
			}
			c := forwardAuthCall(e.srv, r)
			tok, st := e.srv.sourcesToken(c, values(c.Headers, "Authorization"))
			if st != tt.wantState || tok != tt.wantToken {
				t.Errorf("sourcesToken() = %q, %v, want %q, %v", tok, st, tt.wantToken, tt.wantState)
			}
		})
	}
}

// FuzzTokenSources: for any Authorization value, Cookie header and original
// URI, either exactly one token is extracted, which every common parser of
// that form reads as the only value, or the request is refused: missing_token
// without any, malformed for an ambiguous one.
func FuzzTokenSources(f *testing.F) {
	f.Add("Bearer abc", "session=x", "/?access_token=y")
	f.Add("", "session=; session=FORGED", "/?access_token=GOOD&access_token=FORGED;")
	f.Add("", `session="a"; theme=b`, "/?a=1;access_token=z")
	f.Add("", "sess%69on=a", "/?access%5Ftoken=a&access_token=b")
	f.Add("", "sess.ion=a", "/?x&ACCess token=0") // only PHP reads it as access_token
	e := tokenSourceEnv(f)
	f.Fuzz(func(t *testing.T, authorization, cookie, uri string) {
		for _, v := range []string{authorization, cookie, uri} {
			if !httpguts.ValidHeaderFieldValue(v) {
				return // net/http's server refuses such a header: it never reaches a handler
			}
		}
		r := nginxRequest("/")
		r.Header["X-Original-Uri"] = []string{uri}
		if authorization != "" {
			r.Header["Authorization"] = []string{authorization}
		}
		if cookie != "" {
			r.Header["Cookie"] = []string{cookie}
		}
		c := forwardAuthCall(e.srv, r)
		auth := values(c.Headers, "Authorization")
		tok, st := e.srv.sourcesToken(c, auth)
		if st != tokenFound {
			if tok != "" {
				t.Fatalf("state %v with token %q", st, tok)
			}
			// No token at all is missing_token; one that is there but
			// ambiguous or malformed is malformed, and so is a header that
			// spells a source's scheme without its token ("Bearer" alone:
			// malformedScheme, whatever the sources found).
			want := "malformed"
			if st == tokenMissing && !e.srv.malformedScheme(c.Headers, auth) {
				want = "missing_token"
			}
			d := e.srv.Decide(r.Context(), c)
			if d.Class != want || d.Allowed() {
				t.Fatalf("no single token (state %v), decision class %q, want %s", st, d.Class, want)
			}
			return
		}
		if tok == "" {
			t.Fatal("found an empty token")
		}
		// One token per request (RFC 6750 §2): a later source holding a
		// value holds this one, or the request was not decided by it.
		if v, cst := cookieValue(r.Header["Cookie"], "session"); cst == tokenFound && v != tok {
			t.Fatalf("the cookie holds %q beside the extracted %q", v, tok)
		}
		if o, err := request.Nginx.From(r, authzPath); err == nil {
			if v, qst := queryParam(o.RawQuery, "access_token"); qst == tokenFound && v != tok {
				t.Fatalf("the query holds %q beside the extracted %q", v, tok)
			}
		}
		// The cookie source comes before the query: when it holds a value,
		// that is the token, and net/http reads no other.
		if cs := r.CookiesNamed("session"); len(cs) > 1 || (len(cs) == 1 && cs[0].Value != "" && cs[0].Value != tok) {
			t.Fatalf("net/http reads cookies %v, extracted %q", cs, tok)
		}
		if _, cst := cookieValue(r.Header["Cookie"], "session"); cst != tokenMissing {
			return
		}
		o, err := request.Nginx.From(r, authzPath)
		if err != nil {
			return
		}
		if _, qst := queryParam(o.RawQuery, "access_token"); qst != tokenFound {
			return // the token is the Authorization header's
		}
		// From the query: split at '&' alone and at '&' and ';', decoded,
		// access_token appears once, with the extracted value.
		for _, seps := range []string{"&", "&;"} {
			n := 0
			for pair := range strings.FieldsFuncSeq(o.RawQuery, func(c rune) bool { return strings.ContainsRune(seps, c) }) {
				k, v, _ := strings.Cut(pair, "=")
				dk, err := url.QueryUnescape(k)
				if err != nil || !strings.EqualFold(dk, "access_token") {
					continue
				}
				n++
				if dv, err := url.QueryUnescape(v); err != nil || dv != tok {
					t.Fatalf("query %q split at %q holds access_token=%q, extracted %q", o.RawQuery, seps, v, tok)
				}
			}
			if n != 1 {
				t.Fatalf("query %q split at %q holds access_token %d times, extracted %q", o.RawQuery, seps, n, tok)
			}
		}
		if q, err := url.ParseQuery(o.RawQuery); err == nil {
			var vals []string
			for k, vs := range q {
				if strings.EqualFold(k, "access_token") {
					vals = append(vals, vs...)
				}
			}
			if len(vals) != 1 || vals[0] != tok {
				t.Fatalf("url.ParseQuery(%q) reads %q, extracted %q", o.RawQuery, vals, tok)
			}
		}
	})
}

// TestDPoPTokenAndAnotherSource: a token under the DPoP scheme and another
// in a configured cookie source is ambiguous, as two sources are: the
// upstream could read the cookie's.
func TestDPoPTokenAndAnotherSource(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{NoDown: true})
	store, err := replay.NewMemory(10)
	if err != nil {
		t.Fatal(err)
	}
	checker, err := dpop.New(dpop.Options{Replay: store})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Verifier: ve.V, Proxy: request.Nginx, DPoP: checker,
		TokenSources:      []TokenSource{{Header: "Authorization", Prefix: "Bearer "}, {Cookie: "session"}},
		SenderConstraints: map[string]SenderConstraint{issuerA: {DPoP: ConstraintOptional}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, cookie string
		want         tokenState
	}{
		{"dpop-alone", "", tokenFound},
		{"dpop-and-same-cookie", "session=GOOD", tokenFound},
		{"dpop-and-other-cookie", "session=FORGED", tokenAmbiguous},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := nginxRequest("/")
			r.Header.Set("Authorization", "DPoP GOOD")
			if tt.cookie != "" {
				r.Header.Set("Cookie", tt.cookie)
			}
			st := tokenFound
			switch cred := srv.extract(forwardAuthCall(srv, r)); {
			case cred.err == errAmbiguousToken:
				st = tokenAmbiguous
			case cred.err != nil:
				st = tokenMissing
			case !cred.dpop:
				t.Errorf("extract() read %q without the DPoP scheme", cred.token)
			}
			if st != tt.want {
				t.Errorf("extract() state %v, want %v", st, tt.want)
			}
		})
	}
}

// TestCookiePHPNames: PHP's $_COOKIE reads access.token, "access token"
// and access[token as access_token, and access_token[x] as its array; a
// parser that splits at white space or ',' reads a cookie inside another's
// value: each is the cookie access_token again.
func TestCookiePHPNames(t *testing.T) {
	for _, tt := range []struct {
		cookie string
		want   tokenState
	}{
		{"access_token=GOOD", tokenFound},
		{"access_token=GOOD; access.token=FORGED", tokenAmbiguous},
		{"access_token=GOOD; access%20token=FORGED", tokenAmbiguous},
		{"access_token=GOOD; access[token=FORGED", tokenAmbiguous},
		{"access_token=GOOD; access_token[x]=FORGED", tokenAmbiguous},
		{"access_token=GOOD; access.tokens=x", tokenFound},
		// Python's http.cookies also splits at white space, Tomcat's legacy
		// parser at ',': each reads a second access_token.
		{"access_token=GOOD; x=1 access_token=FORGED", tokenAmbiguous},
		{"x=1, access_token=FORGED; access_token=GOOD", tokenAmbiguous},
		{"access_token=GOOD; x=a b", tokenFound},
		// Django strip()s a UTF-8 no-break space (or another Unicode
		// space) from a name, Python and Node a Latin-1 0xA0 or 0x85;
		// Envoy hands '!' in place of a byte that is not UTF-8.
		{"access_token\u00a0=FORGED", tokenAmbiguous},
		{"\u3000access_token=FORGED; x=1", tokenAmbiguous},
		{"access_token\xa0=FORGED", tokenAmbiguous},
		{"\x85access_token=FORGED", tokenAmbiguous},
		{"access_token!=FORGED", tokenAmbiguous},
		{"access_token=GOOD; access_token\u00a0=FORGED", tokenAmbiguous},
		{"access_token\u00e9=x; access_tokens\u00a0=y", tokenAmbiguous},
		{"acc\u00e9ss_token=x", tokenMissing},
		{"access_tokens\u00a0=x", tokenMissing},
		// Python's http.cookies (3.11; SimpleCookie, which aiohttp, Bottle
		// and CherryPy read a request's cookies with) splits at white space
		// and allows white space between a name and its '=':
		// SimpleCookie().load("x=1 access_token =FORGED") holds
		// access_token "FORGED" (and so with ", " or a tab before it).
		{"x=1 access_token =FORGED", tokenAmbiguous},
		{"x=1, access_token\t= FORGED", tokenAmbiguous},
		{"access_token=GOOD; x=1 access_token  =FORGED", tokenAmbiguous},
		{"x=1 access_tokens =y", tokenMissing},
	} {
		t.Run(tt.cookie, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Cookie", tt.cookie)
			if _, st := cookieValue(r.Header["Cookie"], "access_token"); st != tt.want {
				t.Errorf("cookieValue() state %v, want %v", st, tt.want)
			}
		})
	}
}

// TestQueryBracketNames: qs (Express 4's "extended" query parser, its
// default: express 4.22.3 with qs 6.16.2, and qs 6.17.1) reads a name that
// starts with a bracketed one as that name: [access_token]=FORGED,
// %5Baccess_token%5D=FORGED and [access_token]]=FORGED are
// req.query.access_token "FORGED", and [access_token][x] its object.
// PHP drops such a name, Python and Node's querystring keep it as sent, so
// each reading here was no token (an anonymous route let it through) or
// the other one's token. It counts as the parameter: ambiguous.
func TestQueryBracketNames(t *testing.T) {
	for _, tt := range []struct {
		query string
		want  tokenState
	}{
		{"access_token=GOOD", tokenFound},
		{"[access_token]=FORGED", tokenAmbiguous},
		{"%5Baccess_token%5D=FORGED", tokenAmbiguous},
		{"%5baccess_token%5d=FORGED", tokenAmbiguous},
		{"[access_token]]=FORGED", tokenAmbiguous},
		{"[access_token]x=FORGED", tokenAmbiguous},
		{"[access_token][x]=FORGED", tokenAmbiguous},
		{"[ACCESS_TOKEN]=FORGED", tokenAmbiguous},
		{"access_token=GOOD&[access_token]=FORGED", tokenAmbiguous},
		// qs: req.query.access_token is {"[": "FORGED"} (an array beside GOOD).
		{"access_token=GOOD&access_token[=FORGED", tokenAmbiguous},
		// Names qs reads as another parameter.
		{"access_token=GOOD&[access_tokens]=x", tokenFound},
		{"access_token=GOOD&[[access_token]]=x", tokenFound},
		{"access_token=GOOD&x[access_token]=y", tokenFound},
		{"access_token=GOOD&[access_token=y", tokenFound},
	} {
		t.Run(tt.query, func(t *testing.T) {
			if _, st := queryParam(tt.query, "access_token"); st != tt.want {
				t.Errorf("queryParam() state %v, want %v", st, tt.want)
			}
		})
	}
}

// TestAnonymousRouteReadsEveryForm: on a route that allows anonymous
// requests, a token source in a form an application framework reads (qs's
// bracketed query name, Python's http.cookies' spaced cookie name) is not
// "no token": the request is refused malformed, never allowed with the
// application reading an unverified token.
func TestAnonymousRouteReadsEveryForm(t *testing.T) {
	e := newPolicyEnvWith(t, nil, func(o *Options) {
		o.TokenSources = []TokenSource{{Header: "Authorization", Prefix: "Bearer "}, {Cookie: "access_token"}, {Query: "access_token"}}
	})
	for _, tt := range []struct{ name, uri, cookie string }{
		{"qs-bracketed-query", "/public/x?[access_token]=FORGED", ""},
		{"qs-escaped-bracketed-query", "/public/x?a=1&%5Baccess_token%5D=FORGED", ""},
		{"simplecookie-spaced-name", "/public/x", "x=1 access_token =FORGED"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := nginxAuthz("GET", tt.uri, "", nil)
			if tt.cookie != "" {
				r.Header.Set("Cookie", tt.cookie)
			}
			d := e.srv.Decide(t.Context(), forwardAuthCall(e.srv, r))
			if d.Allowed() || d.Class != "malformed" {
				t.Errorf("Decide() allowed %v, class %q; want a malformed refusal", d.Allowed(), d.Class)
			}
		})
	}
}

func TestHeaderTwins(t *testing.T) {
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"Authorization", nil},
		{"X-Token", []string{"X_token"}},
		{"x_token", []string{"X-Token"}},
		{"X-Api-Key", []string{"X_api-Key", "X-Api_key", "X_api_key"}},
	} {
		if got := HeaderTwins(tt.name); strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("HeaderTwins(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	// The first six separators are swapped (maxTwinSeparators): 2^6 - 1
	// twins, however many separators follow.
	for _, tt := range []struct {
		name string
		want int
	}{
		{"X-A-B-C-D-E", 31},
		{"X-A-B-C-D-E-F", 63},
		{"X-A-B-C-D-E-F-G", 63},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(HeaderTwins(tt.name)); got != tt.want {
				t.Errorf("len(HeaderTwins(%q)) = %d, want %d", tt.name, got, tt.want)
			}
		})
	}
}

// TestParamNamesFoldASCIIOnly: a query or cookie name that only Unicode
// case folding reads as the source's (ſ U+017F as s, the Kelvin sign
// U+212A as k: strings.EqualFold, Java's equalsIgnoreCase, .NET's
// OrdinalIgnoreCase for ſ) is the parameter to some readers and not to
// others (net/http, PHP, qs): ambiguous. It was read as the parameter.
func TestParamNamesFoldASCIIOnly(t *testing.T) {
	for _, tt := range []struct {
		name  string
		query bool // else a Cookie header
		value string
		want  tokenState
	}{
		{"query-ascii", true, "ACCESS_TOKEN=T", tokenFound},
		{"query-long-s", true, "acce\u017fs_token=T", tokenAmbiguous},
		{"query-kelvin", true, "access_to\u212aen=T", tokenAmbiguous},
		{"query-long-s-escaped", true, "acce%C5%BFs_token=T", tokenAmbiguous},
		{"query-beside", true, "access_token=GOOD&acce\u017fs_token=F", tokenAmbiguous},
		{"query-other-name", true, "acc\u00e9ss_token=T", tokenMissing},
		{"cookie-ascii", false, "Access_Token=T", tokenFound},
		{"cookie-long-s", false, "acce\u017fs_token=T", tokenAmbiguous},
		{"cookie-kelvin-escaped", false, "access_to%E2%84%AAen=T", tokenAmbiguous},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var st tokenState
			if tt.query {
				_, st = queryParam(tt.value, "access_token")
			} else {
				_, st = cookieValue([]string{tt.value}, "access_token")
			}
			if st != tt.want {
				t.Errorf("state of %q = %v, want %v", tt.value, st, tt.want)
			}
		})
	}
}

// TestCutPrefixFold: a source's prefix is compared ignoring ASCII case
// only; a prefix that is not ASCII must be sent as written ("JÉTON " is
// not "Jéton ", which strings.EqualFold read alike: É and é are both two
// bytes).
func TestCutPrefixFold(t *testing.T) {
	for _, tt := range []struct {
		name, v, prefix, want string
		ok                    bool
	}{
		{"ascii-case", "bearer  x", "Bearer ", "x", true},
		{"empty-prefix", "x", "", "x", true},
		{"short", "Bear", "Bearer ", "", false},
		{"non-ascii-as-written", "Jéton x", "Jéton ", "x", true},
		{"non-ascii-other-case", "JÉTON x", "Jéton ", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := cutPrefixFold(tt.v, tt.prefix); got != tt.want || ok != tt.ok {
				t.Errorf("cutPrefixFold(%q, %q) = %q, %v; want %q, %v", tt.v, tt.prefix, got, ok, tt.want, tt.ok)
			}
		})
	}
}
