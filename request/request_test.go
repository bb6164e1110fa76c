package request_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

func TestNormalizePath(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"", "/", nil},
		{"/", "/", nil},
		{"/orders/1", "/orders/1", nil},
		{"/orders/", "/orders/", nil},
		// Dot and empty segments, in every spelling, are ambiguous: routers
		// behind the proxy resolve them differently (Go's ServeMux and Flask
		// keep /admin/../anon under /admin, WHATWG URL reads //anon/x as the
		// host anon), so none is tidied up and decided.
		{"//orders///1", "", request.ErrAmbiguousPath},
		{"//anon/admin/secret", "", request.ErrAmbiguousPath},
		{"/admin//../anon/x", "", request.ErrAmbiguousPath},
		{"/a//", "", request.ErrAmbiguousPath},
		{"/a//b", "", request.ErrAmbiguousPath},
		{"/a/./b", "", request.ErrAmbiguousPath},
		{"/a/b/..", "", request.ErrAmbiguousPath},
		{"/a/b/../c", "", request.ErrAmbiguousPath},
		{"/a/.", "", request.ErrAmbiguousPath},
		{"/.", "", request.ErrAmbiguousPath},
		{"/./", "", request.ErrAmbiguousPath},
		{"/public/../admin", "", request.ErrAmbiguousPath},
		{"/admin/%2e%2e/anon/x", "", request.ErrAmbiguousPath},
		{"/admin/%2E%2e/anon/x", "", request.ErrAmbiguousPath},
		{"/admin/.%2e/anon/x", "", request.ErrAmbiguousPath},
		{"/admin/%2e./anon/x", "", request.ErrAmbiguousPath},
		{"/admin/%2e/x", "", request.ErrAmbiguousPath},
		{"/admin/x/../../public/y", "", request.ErrAmbiguousPath},
		{"/public/%2e%2e/admin", "", request.ErrAmbiguousPath},
		{"/%61dmin", "/admin", nil},
		{"/%7Euser", "/~user", nil},
		{"/public/%7e/x", "/public/~/x", nil},
		{"/a%2e%2E/b", "/a../b", nil},
		{"/.well-known/openid-configuration", "/.well-known/openid-configuration", nil},
		{"/a/.../b", "/a/.../b", nil},
		{"/a/..b/.c/", "/a/..b/.c/", nil},
		{"/a%20b", "/a%20b", nil},
		{"/a%3ab", "/a%3Ab", nil},
		{"/a%3Bb", "/a%3Bb", nil},
		// Tomcat, Jetty and Spring strip path parameters before routing
		// (/admin;x/secret is their /admin/secret): a raw ';' is ambiguous.
		{"/a;b", "", request.ErrAmbiguousPath},
		{"/admin;x/secret", "", request.ErrAmbiguousPath},
		{"/admin;/secret", "", request.ErrAmbiguousPath},
		{"/admin/;", "", request.ErrAmbiguousPath},
		// A request target holds no fragment (RFC 9112 §3.2): servers that
		// do not cut one at '#' read what follows as the path.
		{"/public#/../admin", "", request.ErrAmbiguousPath},
		{"/..", "", request.ErrAmbiguousPath},
		{"/../admin", "", request.ErrAmbiguousPath},
		{"/a/../../admin", "", request.ErrAmbiguousPath},
		{"/%2e%2e/admin", "", request.ErrAmbiguousPath},
		{"/%2E%2E%2Fadmin", "", request.ErrAmbiguousPath},
		{"/admin%2Fx", "", request.ErrAmbiguousPath},
		{"/admin%2fx", "", request.ErrAmbiguousPath},
		{"/admin\\x", "", request.ErrAmbiguousPath},
		{"/admin%5Cx", "", request.ErrAmbiguousPath},
		{"/admin%5cx", "", request.ErrAmbiguousPath},
		{"/admin\x00", "", request.ErrAmbiguousPath},
		{"/admin%00", "", request.ErrAmbiguousPath},
		{"/admin%", "", request.ErrAmbiguousPath},
		{"/admin%4", "", request.ErrAmbiguousPath},
		{"/admin%zz", "", request.ErrAmbiguousPath},
		{"/public/..;/admin", "", request.ErrAmbiguousPath},
		{"/public/.;x/admin", "", request.ErrAmbiguousPath},
		{"admin", "", request.ErrAmbiguousPath},
		{"*", "", request.ErrAmbiguousPath},
	}
	for _, tt := range tests {
		t.Run(strings.NewReplacer("/", "_", "\x00", "NUL").Replace(tt.in), func(t *testing.T) {
			got, err := request.NormalizePath(tt.in)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("NormalizePath(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"API.Example.com":      "api.example.com",
		"api.example.com:8443": "api.example.com",
		"api.example.com.":     "api.example.com",
		"[::1]:8080":           "::1",
		"[::1]":                "::1",
		"":                     "",
		// ASCII letters only: U+212A (KELVIN SIGN) stays itself, where
		// strings.ToLower would make it 'k'.
		"\u212AIOSK.example.com": "\u212Aiosk.example.com",
	} {
		if got := request.NormalizeHost(in); got != want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProxyFrom(t *testing.T) {
	nginx := http.Header{"X-Original-Method": {"POST"}, "X-Original-Uri": {"/orders/1?access_token=x"}, "X-Original-Host": {"api.example.com:443"}, "X-Original-Proto": {"https"}}
	traefik := http.Header{"X-Forwarded-Method": {"GET"}, "X-Forwarded-Uri": {"/%61dmin"}, "X-Forwarded-Host": {"api.example.com"}}
	both := http.Header{}
	for k, v := range nginx {
		both[k] = v
	}
	for k, v := range traefik {
		both[k] = v
	}
	tests := []struct {
		name    string
		proxy   request.Proxy
		target  string
		header  http.Header
		want    request.Original
		wantErr error
	}{
		{"nginx", request.Nginx, "/v1/authz", nginx, request.Original{Method: "POST", Scheme: "https", Host: "api.example.com", Port: "443", Path: "/orders/1", RawQuery: "access_token=x"}, nil},
		{"nginx-ignores-traefik-headers", request.Nginx, "/v1/authz", both, request.Original{Method: "POST", Scheme: "https", Host: "api.example.com", Port: "443", Path: "/orders/1", RawQuery: "access_token=x"}, nil},
		{"nginx-without-its-headers", request.Nginx, "/v1/authz", traefik, request.Original{}, request.ErrMissing},
		{"traefik", request.Traefik, "/v1/authz", traefik, request.Original{Method: "GET", Host: "api.example.com", Path: "/admin", SentPath: "/%61dmin"}, nil},
		{"caddy-reads-traefik-headers", request.Caddy, "/v1/authz", both, request.Original{Method: "GET", Host: "api.example.com", Path: "/admin", SentPath: "/%61dmin"}, nil},
		{"traefik-dot-segment", request.Traefik, "/v1/authz", http.Header{"X-Forwarded-Method": {"GET"}, "X-Forwarded-Uri": {"/public/../admin"}, "X-Forwarded-Host": {"h"}}, request.Original{}, request.ErrAmbiguousPath},
		{"traefik-port", request.Traefik, "/v1/authz", http.Header{"X-Forwarded-Method": {"GET"}, "X-Forwarded-Uri": {"/x"}, "X-Forwarded-Host": {"h:8443"}, "X-Forwarded-Proto": {"https"}}, request.Original{Method: "GET", Scheme: "https", Host: "h", Port: "8443", Path: "/x"}, nil},
		{"nginx-override-header", request.Nginx, "/v1/authz", http.Header{"X-Original-Method": {"POST"}, "X-Original-Uri": {"/orders/1"}, "X-Original-Host": {"h"}, "X-Http-Method-Override": {"delete"}}, request.Original{Method: "POST", Host: "h", Path: "/orders/1", Overrides: "DELETE"}, nil},
		{"nginx-override-cgi-twin", request.Nginx, "/v1/authz", http.Header{"X-Original-Method": {"POST"}, "X-Original-Uri": {"/orders/1"}, "X-Original-Host": {"h"}, "X_http_method_override": {"PUT"}, "X-Method-Override": {"PATCH"}}, request.Original{Method: "POST", Host: "h", Path: "/orders/1", Overrides: "PATCH PUT"}, nil},
		{"nginx-override-not-a-token", request.Nginx, "/v1/authz", http.Header{"X-Original-Method": {"POST"}, "X-Original-Uri": {"/orders/1"}, "X-Original-Host": {"h"}, "X-Http-Method": {"DELETE, PUT"}}, request.Original{}, request.ErrAmbiguousMethod},
		// '!' is a token character, but Envoy's stand-in for a byte that is
		// not UTF-8: "DELETE!" may be "DELETE\xa0" at the application, which
		// trims it and runs DELETE; a route for DELETE would not match it here.
		{"nginx-override-replaced-byte", request.Nginx, "/v1/authz", http.Header{"X-Original-Method": {"POST"}, "X-Original-Uri": {"/orders/1"}, "X-Original-Host": {"h"}, "X-Http-Method-Override": {"DELETE!"}}, request.Original{}, request.ErrAmbiguousMethod},
		{"envoy-override", request.Envoy, "/v1/authz/orders/1?_method=put", http.Header{"X-Http-Method-Override": {"DELETE"}}, request.Original{Method: "GET", Host: "api.example.com", Path: "/orders/1", RawQuery: "_method=put", Overrides: "DELETE PUT"}, nil},
		{"traefik-without-its-headers", request.Traefik, "/v1/authz", nginx, request.Original{}, request.ErrMissing},
		{"repeated-header", request.Nginx, "/v1/authz", http.Header{"X-Original-Method": {"GET"}, "X-Original-Uri": {"/a", "/b"}, "X-Original-Host": {"h"}}, request.Original{}, request.ErrMissing},
		{"none", request.None, "/v1/authz", nginx, request.Original{}, request.ErrMissing},
		{"envoy", request.Envoy, "/v1/authz/orders/1?a=b", nil, request.Original{Method: "GET", Host: "api.example.com", Path: "/orders/1", RawQuery: "a=b"}, nil},
		{"envoy-bare-prefix", request.Envoy, "/v1/authz", nil, request.Original{Method: "GET", Host: "api.example.com", Path: "/"}, nil},
		{"envoy-ignores-headers", request.Envoy, "/v1/authz/x", traefik, request.Original{Method: "GET", Host: "api.example.com", Path: "/x"}, nil},
		{"envoy-not-below-prefix", request.Envoy, "/v1/authzx", nil, request.Original{}, request.ErrMissing},
		{"envoy-encoded-slash", request.Envoy, "/v1/authz/public%2F..%2Fadmin", nil, request.Original{}, request.ErrAmbiguousPath},
		{"envoy-dot-dot", request.Envoy, "/v1/authz/../../admin", nil, request.Original{}, request.ErrAmbiguousPath},
		// The target as sent: Go's EscapedPath rebuilds a path holding '|'
		// from its decoded form, and the encoded '/' would become a real one.
		{"envoy-encoded-slash-beside-pipe", request.Envoy, "/v1/authz/users/a%2Fb|/admin", nil, request.Original{}, request.ErrAmbiguousPath},
		{"envoy-pipe", request.Envoy, "/v1/authz/a|b?x=1", nil, request.Original{Method: "GET", Host: "api.example.com", Path: "/a|b", RawQuery: "x=1"}, nil},
		{"nginx-host-two-colons", request.Nginx, "/v1/authz", http.Header{"X-Original-Method": {"GET"}, "X-Original-Uri": {"/x"}, "X-Original-Host": {"admin.example.com:1:2"}}, request.Original{}, request.ErrAmbiguousHost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "http://api.example.com"+tt.target, nil)
			for k, v := range tt.header {
				r.Header[k] = v
			}
			got, err := tt.proxy.From(r, "/v1/authz")
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("From() = %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	// r.TLS is the connection from Envoy, not the client's: the scheme is
	// unknown (a DPoP proof then fails rather than match a guess).
	t.Run("envoy-scheme-unknown", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "https://api.example.com/v1/authz/x", nil)
		r.TLS = &tls.ConnectionState{}
		if got, err := request.Envoy.From(r, "/v1/authz"); err != nil || got.Scheme != "" {
			t.Errorf("From() = %+v, %v; want no scheme", got, err)
		}
	})
}

// TestFromRequest: the request a handler serves, read as the original one
// (Middleware): CONNECT is refused, as Go's ServeMux routes it on the host
// with its port (not as the path a route names), and so is a URL that is
// not the RequestURI the client sent.
func TestFromRequest(t *testing.T) {
	for _, tt := range []struct {
		name    string
		method  string
		target  string
		want    request.Original
		wantErr error
	}{
		{"get", http.MethodGet, "http://api.example.com/orders/1?a=b", request.Original{Method: "GET", Scheme: "http", Host: "api.example.com", Path: "/orders/1", RawQuery: "a=b"}, nil},
		{"connect", http.MethodConnect, "api.example.com:443", request.Original{}, request.ErrAmbiguousMethod},
		// A handler in front rewrote r.URL (http.StripPrefix): the request
		// decided would not be the one the client sent.
		{"url-rewritten", http.MethodGet, "http://api.example.com/api/admin", request.Original{}, request.ErrAmbiguousPath},
		// Targets net/http parses that are neither a path nor an http(s)
		// URL: Path empty (read as "/"), the target in Opaque or under
		// another scheme, which a reverse proxy sends on (FuzzFromRequest).
		{"opaque-target", http.MethodGet, "a:admin", request.Original{}, request.ErrAmbiguousPath},
		{"scheme-only-target", http.MethodGet, "A:", request.Original{}, request.ErrAmbiguousPath},
		{"http-opaque-target", http.MethodGet, "http:admin", request.Original{}, request.ErrAmbiguousPath},
		{"other-scheme-target", http.MethodGet, "ftp://api.example.com/admin", request.Original{}, request.ErrAmbiguousPath},
		// An http URI without a host, which RFC 9110 (4.2.1) says a
		// recipient must reject (FuzzFromRequest).
		{"http-without-host", http.MethodGet, "http:", request.Original{}, request.ErrAmbiguousPath},
		{"http-path-without-host", http.MethodGet, "http:/admin", request.Original{}, request.ErrAmbiguousPath},
		{"http-empty-authority", http.MethodGet, "http:///admin", request.Original{}, request.ErrAmbiguousPath},
		// Userinfo in the target (RFC 9110 4.2.4: an error), refused as
		// FromParts refuses it.
		{"userinfo-target", http.MethodGet, "http://u@api.example.com/admin", request.Original{}, request.ErrAmbiguousPath},
		{"absolute-without-path", http.MethodGet, "HTTP://api.example.com", request.Original{Method: "GET", Scheme: "http", Host: "api.example.com", Path: "/"}, nil},
		// A host header beside :authority, which Go's HTTP/2 server leaves
		// in r.Header (r.Host is :authority's): a handler may read it.
		{"host-header-same", http.MethodGet, "/orders/1", request.Original{Method: "GET", Scheme: "http", Host: "api.example.com", Path: "/orders/1"}, nil},
		{"host-header-other", http.MethodGet, "/orders/1", request.Original{}, request.ErrAmbiguousHost},
		// An absolute-form :path over HTTP/2: r.Host is :authority's, r.URL
		// the target's (HTTP/1 makes r.Host the target's host).
		{"target-host-other", http.MethodGet, "http://admin.example.com/orders/1", request.Original{}, request.ErrAmbiguousHost},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(tt.method + " " + tt.target + " HTTP/1.1\r\nHost: api.example.com\r\n\r\n")))
			if err != nil {
				t.Fatalf("ReadRequest(%q) = %v", tt.target, err)
			}
			switch tt.name {
			case "url-rewritten":
				r.URL.Path = "/admin"
			case "host-header-same":
				r.Header["Host"] = []string{"api.example.com"}
			case "host-header-other":
				r.Header["Host"] = []string{"admin.example.com"}
			case "target-host-other":
				r.Host = "api.example.com"
			}
			got, err := request.FromRequest(r)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("FromRequest() = %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestFromParts(t *testing.T) {
	tests := []struct {
		name                      string
		method, scheme, host, uri string
		want                      request.Original
		wantErr                   error
	}{
		{"plain", "GET", "HTTPS", "h", "/a?b", request.Original{Method: "GET", Scheme: "https", Host: "h", Path: "/a", RawQuery: "b"}, nil},
		// A raw '#' is no fragment a client sent (RFC 9112 §3.2 has none):
		// an upstream that does not cut there reads another path or query.
		{"fragment-in-query", "GET", "HTTPS", "h", "/a?b#c", request.Original{}, request.ErrAmbiguousPath},
		{"fragment-hides-climb", "GET", "", "h", "/public#/../admin", request.Original{}, request.ErrAmbiguousPath},
		{"path-parameters", "GET", "", "h", "/admin;jsessionid=1/secret", request.Original{}, request.ErrAmbiguousPath},
		// Bytes no request line carries (a header value may hold a tab):
		// nginx, Envoy and Go refuse such a request.
		{"tab-in-path", "GET", "", "h", "/admin\tx", request.Original{}, request.ErrAmbiguousPath},
		{"space-in-path", "GET", "", "h", "/public /admin", request.Original{}, request.ErrAmbiguousPath},
		{"control-in-path", "GET", "", "h", "/a\x01", request.Original{}, request.ErrAmbiguousPath},
		{"del-in-query", "GET", "", "h", "/a?b=\x7f", request.Original{}, request.ErrAmbiguousPath},
		{"utf8-in-path", "GET", "", "h", "/caf\u00e9", request.Original{Method: "GET", Host: "h", Path: "/caf\u00e9"}, nil}, // not a control character
		{"semicolon-in-query", "GET", "", "h", "/a?b=1;c=2", request.Original{Method: "GET", Host: "h", Path: "/a", RawQuery: "b=1;c=2"}, nil},
		{"absolute-form", "GET", "", "h", "https://other/a/b?q", request.Original{Method: "GET", Host: "h", Path: "/a/b", RawQuery: "q"}, nil},
		{"absolute-form-no-path", "GET", "", "h", "http://other", request.Original{Method: "GET", Host: "h", Path: "/"}, nil},
		// An absolute-form whose authority is no host (RFC 9110 4.2.1: an
		// http URI without one must be rejected, as FromRequest does;
		// 4.2.4: userinfo is an error): WHATWG URL (Node) reads
		// "http://other\\admin" as the path /admin, decided here as "/".
		{"absolute-form-empty-host", "GET", "", "h", "http:///admin", request.Original{}, request.ErrAmbiguousPath},
		{"absolute-form-nothing", "GET", "", "h", "http://", request.Original{}, request.ErrAmbiguousPath},
		{"absolute-form-backslash", "GET", "", "h", "http://other\\admin", request.Original{}, request.ErrAmbiguousPath},
		{"absolute-form-userinfo", "GET", "", "h", "https://u@other/a", request.Original{}, request.ErrAmbiguousPath},
		{"absolute-form-open-ipv6", "GET", "", "h", "http://[::1/a", request.Original{}, request.ErrAmbiguousPath},
		{"absolute-form-port", "GET", "", "h", "http://other:8080?q", request.Original{Method: "GET", Host: "h", Path: "/", RawQuery: "q"}, nil},
		{"fragment-hides-query", "GET", "", "h", "/a#?access_token=x", request.Original{}, request.ErrAmbiguousPath},
		{"no-method", "", "", "h", "/", request.Original{}, request.ErrMissing},
		{"odd-scheme", "GET", "ftp", "h", "/", request.Original{}, request.ErrMissing},
		{"ambiguous", "GET", "", "h", "/a%2fb", request.Original{}, request.ErrAmbiguousPath},
		// Django and Werkzeug (Flask) upper-case the method they are sent:
		// behind a proxy that forwards "delete" as sent (Traefik, Caddy),
		// a route or expression about DELETE must see DELETE.
		// A method or host in another spelling than routes compare is
		// ambiguous: Django upper-cases "delete", Go's ServeMux runs it
		// as sent and matches no "DELETE /…" pattern with it.
		{"method-lower-case", "delete", "", "h", "/", request.Original{}, request.ErrAmbiguousMethod},
		{"method-mixed-case", "Post", "", "h", "/", request.Original{}, request.ErrAmbiguousMethod},
		{"method-extension", "M-SEARCH", "", "h", "/", request.Original{Method: "M-SEARCH", Host: "h", Path: "/"}, nil},
		{"method-extension-lower-case", "m-search", "", "h", "/", request.Original{}, request.ErrAmbiguousMethod},
		{"port", "GET", "https", "h:8443", "/", request.Original{Method: "GET", Scheme: "https", Host: "h", Port: "8443", Path: "/"}, nil},
		{"host-upper-case-with-port", "GET", "https", "H:8443", "/", request.Original{}, request.ErrAmbiguousHost},
		{"ipv6-port", "GET", "https", "[::1]:8443", "/", request.Original{Method: "GET", Scheme: "https", Host: "::1", Port: "8443", Path: "/"}, nil},
		// Method overrides in the query (Laravel, Symfony, Express's
		// method-override): the request is decided for each method named.
		{"query-override", "POST", "", "h", "/orders/1?_method=DELETE", request.Original{Method: "POST", Host: "h", Path: "/orders/1", RawQuery: "_method=DELETE", Overrides: "DELETE"}, nil},
		{"query-override-lower", "POST", "", "h", "/o?_method=delete", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: "_method=delete", Overrides: "DELETE"}, nil},
		{"query-override-own-method", "POST", "", "h", "/o?_method=post", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: "_method=post"}, nil},
		{"query-override-encoded-name", "POST", "", "h", "/o?%5Fmethod=PUT&_%6Dethod=PATCH", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: "%5Fmethod=PUT&_%6Dethod=PATCH", Overrides: "PATCH PUT"}, nil},
		{"query-override-php-dot", "POST", "", "h", "/o?.method=DELETE", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: ".method=DELETE", Overrides: "DELETE"}, nil},
		{"query-override-php-space", "POST", "", "h", "/o?+_method=DELETE", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: "+_method=DELETE", Overrides: "DELETE"}, nil},
		{"query-override-semicolon", "POST", "", "h", "/o?a=1;_method=DELETE", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: "a=1;_method=DELETE", Overrides: "DELETE"}, nil},
		{"query-override-case", "POST", "", "h", "/o?_METHOD=DELETE", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: "_METHOD=DELETE", Overrides: "DELETE"}, nil},
		{"query-override-twice", "POST", "", "h", "/o?_method=PUT&_method=DELETE&_method=put", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: "_method=PUT&_method=DELETE&_method=put", Overrides: "DELETE PUT"}, nil},
		// At most MaxOverrides methods besides the request's: each is a
		// policy choice, and no application reads more than one.
		{"query-override-eight", "POST", "", "h", "/o?_method=A&_method=B&_method=C&_method=D&_method=E&_method=F&_method=G&_method=H&_method=post&_method=h", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: "_method=A&_method=B&_method=C&_method=D&_method=E&_method=F&_method=G&_method=H&_method=post&_method=h", Overrides: "A B C D E F G H"}, nil},
		{"query-override-nine", "POST", "", "h", "/o?_method=A&_method=B&_method=C&_method=D&_method=E&_method=F&_method=G&_method=H&_method=I", request.Original{}, request.ErrAmbiguousMethod},
		{"query-override-array", "POST", "", "h", "/o?_method[]=DELETE", request.Original{}, request.ErrAmbiguousMethod},
		{"query-override-empty", "POST", "", "h", "/o?_method=", request.Original{}, request.ErrAmbiguousMethod},
		{"query-override-list", "POST", "", "h", "/o?_method=DELETE,PUT", request.Original{}, request.ErrAmbiguousMethod},
		{"query-override-space", "POST", "", "h", "/o?_method=DELETE+", request.Original{}, request.ErrAmbiguousMethod},
		{"query-override-bad-escape", "POST", "", "h", "/o?_method=%zz", request.Original{}, request.ErrAmbiguousMethod},
		{"query-bad-escape-name", "POST", "", "h", "/o?%zzmethod=x", request.Original{}, request.ErrAmbiguousMethod},
		{"query-other-method-param", "POST", "", "h", "/o?payment_method=card&method=x", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: "payment_method=card&method=x"}, nil},
		// PHP reads a name as a C string: "_method%00x" is its _method.
		{"query-override-php-nul", "POST", "", "h", "/o?_method%00x=DELETE", request.Original{Method: "POST", Host: "h", Path: "/o", RawQuery: "_method%00x=DELETE", Overrides: "DELETE"}, nil},
		// Hosts every proxy and application reads alike, and those they
		// do not: nginx takes everything before the first ':' as the host,
		// Unicode case folding reads U+212A as 'k'.
		{"host-trailing-dot", "GET", "", "api.example.com.", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-trailing-dot-port", "GET", "", "api.example.com.:443", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-upper-case", "GET", "", "Api.Example.com", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-empty-port", "GET", "", "h:", "/", request.Original{Method: "GET", Host: "h", Path: "/"}, nil},
		{"host-underscore", "GET", "", "svc_a.internal:80", "/", request.Original{Method: "GET", Host: "svc_a.internal", Port: "80", Path: "/"}, nil},
		{"host-ipv4", "GET", "", "10.0.0.1:8080", "/", request.Original{Method: "GET", Host: "10.0.0.1", Port: "8080", Path: "/"}, nil},
		{"host-none", "GET", "", "", "/", request.Original{Method: "GET", Path: "/"}, nil},
		{"host-two-colons", "GET", "", "admin.example.com:1:2", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-port-not-digits", "GET", "", "admin.example.com:x", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-port-too-long", "GET", "", "h:123456", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-unicode", "GET", "", "\u212Aiosk.example.com", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-escaped", "GET", "", "admin%2eexample.com", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-list", "GET", "", "a.example.com, admin.example.com", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-empty-label", "GET", "", "admin..example.com", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-only-dot", "GET", "", ".", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-userinfo", "GET", "", "user@admin.example.com", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-ipv6-unclosed", "GET", "", "[::1", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-ipv6-zone", "GET", "", "[fe80::1%25eth0]", "/", request.Original{}, request.ErrAmbiguousHost},
		{"host-ipv6-trailing", "GET", "", "[::1]x", "/", request.Original{}, request.ErrAmbiguousHost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := request.FromParts(tt.method, tt.scheme, tt.host, tt.uri)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("FromParts() = %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestOriginalURL(t *testing.T) {
	for _, tt := range []struct {
		scheme, host, want string
	}{
		{"https", "api.example.com", "https://api.example.com/x"},
		{"https", "api.example.com:443", "https://api.example.com/x"},
		{"https", "api.example.com:8443", "https://api.example.com:8443/x"},
		{"http", "api.example.com:80", "http://api.example.com/x"},
		{"http", "api.example.com:443", "http://api.example.com:443/x"},
		{"https", "[::1]:8443", "https://[::1]:8443/x"},
		{"https", "[::1]", "https://[::1]/x"},
	} {
		o, err := request.FromParts("GET", tt.scheme, tt.host, "/x")
		if err != nil || o.URL() != tt.want {
			t.Errorf("FromParts(%s, %s).URL() = %q, %v; want %q", tt.scheme, tt.host, o.URL(), err, tt.want)
		}
	}
}

func TestMethods(t *testing.T) {
	o, err := request.FromParts("POST", "", "h", "/o?_method=delete&_method=PUT")
	if err != nil {
		t.Fatal(err)
	}
	o, err = o.WithHeaderOverrides(func(yield func(string, string) bool) {
		_ = yield("x-http-method", "PATCH") && yield("X-Method-Override", "DELETE") && yield("X-Other", "TRACE")
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range o.Methods() {
		got = append(got, m)
	}
	if want := "POST DELETE PATCH PUT"; strings.Join(got, " ") != want {
		t.Errorf("Methods() = %q, want %q", got, want)
	}
}

func TestParseProxy(t *testing.T) {
	for _, name := range append(request.Proxies(), "") {
		if p, err := request.ParseProxy(name); err != nil || string(p) != name {
			t.Errorf("ParseProxy(%q) = %q, %v", name, p, err)
		}
	}
	if _, err := request.ParseProxy("haproxy"); err == nil {
		t.Errorf("ParseProxy(haproxy) = nil error, want one")
	}
}

// TestNormalizeAllocations: an already-normal path and host, what nearly
// every request carries, are returned without allocating.
func TestNormalizeAllocations(t *testing.T) {
	for _, tt := range []struct{ path, host string }{
		{"/orders/1", "shop.example.com"},
		{"/", "api.internal"},
		{"/a/b/", "10.0.0.7"},
	} {
		if n := testing.AllocsPerRun(100, func() {
			if p, err := request.NormalizePath(tt.path); err != nil || p != tt.path {
				t.Fatalf("NormalizePath(%q) = %q, %v", tt.path, p, err)
			}
			if h := request.NormalizeHost(tt.host); h != tt.host {
				t.Fatalf("NormalizeHost(%q) = %q", tt.host, h)
			}
			if m := request.NormalizeMethod("DELETE"); m != "DELETE" {
				t.Fatalf("NormalizeMethod(DELETE) = %q", m)
			}
		}); n != 0 {
			t.Errorf("%q on %q: %v allocations, want 0", tt.path, tt.host, n)
		}
	}
}

// TestHostIPSpelling: FromParts refuses a host that is an IP address in
// another spelling than its canonical one (ErrAmbiguousHost): inet_aton,
// Go's netip and nginx read them differently, and a route for the address
// would not see them. Names that hold digits and hex-like labels, but do
// not end in a number, pass.
func TestHostIPSpelling(t *testing.T) {
	tests := []struct {
		host, want string // want "": refused
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1:8080", "127.0.0.1"},
		{"255.255.255.255", "255.255.255.255"},
		{"0.0.0.0", "0.0.0.0"},
		{"10.20.30.40", "10.20.30.40"},
		{"a1.example", "a1.example"},
		{"1a.example", "1a.example"},
		{"123.example", "123.example"},
		{"0x1.example", "0x1.example"},
		{"1e100.net", "1e100.net"},
		{"example.0x1g", "example.0x1g"},
		{"example.1a", "example.1a"},
		{"[::1]", "::1"},
		{"[::1]:8443", "::1"},
		{"[2001:db8::1]", "2001:db8::1"},
		{"[2001:DB8::1]", ""},
		{"[::7f00:1]", "::7f00:1"},
		{"127.1", ""},
		{"127.0.1", ""},
		{"2130706433", ""},
		{"2130706433:80", ""},
		{"0x7f000001", ""},
		{"0x7f.0.0.1", ""},
		{"0X7F.0.0.1", ""},
		{"0177.0.0.1", ""},
		{"127.000.000.001", ""},
		{"127.0.0.01", ""},
		{"127.0.0.1.", ""},
		{"127.0.0.1.:80", ""},
		{"256.0.0.1", ""},
		{"1.2.3.4.5", ""},
		{"1.2.3", ""},
		{"0x1", ""},
		{"0x", ""},
		{"1", ""},
		{"example.123", ""},
		{"example.0xff", ""},
		{"[0:0::1]", ""},
		{"[::0001]", ""},
		{"[0:0:0:0:0:0:0:1]", ""},
		{"[2001:db8:0:0:0:0:0:1]", ""},
		{"[::127.0.0.1]", ""},
		{"[::ffff:127.0.0.1]", ""},
		{"[::FFFF:127.0.0.1]:80", ""},
		{"[::ffff:7f00:1]", ""},
		{"[::ffff:0:0]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			o, err := request.FromParts("GET", "https", tt.host, "/")
			if tt.want == "" {
				if !errors.Is(err, request.ErrAmbiguousHost) {
					t.Fatalf("FromParts(host %q) = %q, %v; want ErrAmbiguousHost", tt.host, o.Host, err)
				}
				return
			}
			if err != nil || o.Host != tt.want {
				t.Fatalf("FromParts(host %q) = %q, %v; want %q", tt.host, o.Host, err, tt.want)
			}
		})
	}
}
