package request_test

import (
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
		{"//orders///1", "/orders/1", nil},
		{"/a/./b", "/a/b", nil},
		{"/a/b/..", "/a/", nil},
		{"/a/b/../c", "/a/c", nil},
		{"/a/.", "/a/", nil},
		{"/public/../admin", "/admin", nil},
		{"/%61dmin", "/admin", nil},
		{"/%7Euser", "/~user", nil},
		{"/a%2e%2E/b", "/a../b", nil},
		{"/public/%2e%2e/admin", "/admin", nil},
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
	} {
		if got := request.NormalizeHost(in); got != want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProxyFrom(t *testing.T) {
	nginx := http.Header{"X-Original-Method": {"POST"}, "X-Original-Uri": {"/orders/1?access_token=x"}, "X-Original-Host": {"API.example.com:443"}, "X-Original-Proto": {"https"}}
	traefik := http.Header{"X-Forwarded-Method": {"GET"}, "X-Forwarded-Uri": {"/public/../admin"}, "X-Forwarded-Host": {"api.example.com"}}
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
		{"nginx", request.Nginx, "/v1/authz", nginx, request.Original{Method: "POST", Scheme: "https", Host: "api.example.com", Path: "/orders/1", RawQuery: "access_token=x"}, nil},
		{"nginx-ignores-traefik-headers", request.Nginx, "/v1/authz", both, request.Original{Method: "POST", Scheme: "https", Host: "api.example.com", Path: "/orders/1", RawQuery: "access_token=x"}, nil},
		{"nginx-without-its-headers", request.Nginx, "/v1/authz", traefik, request.Original{}, request.ErrMissing},
		{"traefik", request.Traefik, "/v1/authz", traefik, request.Original{Method: "GET", Host: "api.example.com", Path: "/admin"}, nil},
		{"caddy-reads-traefik-headers", request.Caddy, "/v1/authz", both, request.Original{Method: "GET", Host: "api.example.com", Path: "/admin"}, nil},
		{"traefik-without-its-headers", request.Traefik, "/v1/authz", nginx, request.Original{}, request.ErrMissing},
		{"repeated-header", request.Nginx, "/v1/authz", http.Header{"X-Original-Method": {"GET"}, "X-Original-Uri": {"/a", "/b"}, "X-Original-Host": {"h"}}, request.Original{}, request.ErrMissing},
		{"none", request.None, "/v1/authz", nginx, request.Original{}, request.ErrMissing},
		{"envoy", request.Envoy, "/v1/authz/orders/1?a=b", nil, request.Original{Method: "GET", Scheme: "http", Host: "api.example.com", Path: "/orders/1", RawQuery: "a=b"}, nil},
		{"envoy-bare-prefix", request.Envoy, "/v1/authz", nil, request.Original{Method: "GET", Scheme: "http", Host: "api.example.com", Path: "/"}, nil},
		{"envoy-ignores-headers", request.Envoy, "/v1/authz/x", both, request.Original{Method: "GET", Scheme: "http", Host: "api.example.com", Path: "/x"}, nil},
		{"envoy-not-below-prefix", request.Envoy, "/v1/authzx", nil, request.Original{}, request.ErrMissing},
		{"envoy-encoded-slash", request.Envoy, "/v1/authz/public%2F..%2Fadmin", nil, request.Original{}, request.ErrAmbiguousPath},
		{"envoy-dot-dot", request.Envoy, "/v1/authz/../../admin", nil, request.Original{}, request.ErrAmbiguousPath},
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
	t.Run("envoy-tls", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "https://api.example.com/v1/authz/x", nil)
		r.TLS = &tls.ConnectionState{}
		if got, err := request.Envoy.From(r, "/v1/authz"); err != nil || got.Scheme != "https" {
			t.Errorf("From() = %+v, %v; want scheme https", got, err)
		}
	})
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
		{"semicolon-in-query", "GET", "", "h", "/a?b=1;c=2", request.Original{Method: "GET", Host: "h", Path: "/a", RawQuery: "b=1;c=2"}, nil},
		{"absolute-form", "GET", "", "h", "https://other/a/b?q", request.Original{Method: "GET", Host: "h", Path: "/a/b", RawQuery: "q"}, nil},
		{"absolute-form-no-path", "GET", "", "h", "http://other", request.Original{Method: "GET", Host: "h", Path: "/"}, nil},
		{"fragment-hides-query", "GET", "", "h", "/a#?access_token=x", request.Original{}, request.ErrAmbiguousPath},
		{"no-method", "", "", "h", "/", request.Original{}, request.ErrMissing},
		{"odd-scheme", "GET", "ftp", "h", "/", request.Original{}, request.ErrMissing},
		{"ambiguous", "GET", "", "h", "/a%2fb", request.Original{}, request.ErrAmbiguousPath},
		// Django and Werkzeug (Flask) upper-case the method they are sent:
		// behind a proxy that forwards "delete" as sent (Traefik, Caddy),
		// a route or expression about DELETE must see DELETE.
		{"method-upper-cased", "delete", "", "h", "/", request.Original{Method: "DELETE", Host: "h", Path: "/"}, nil},
		{"method-mixed-case", "Post", "", "h", "/", request.Original{Method: "POST", Host: "h", Path: "/"}, nil},
		{"method-extension", "m-search", "", "h", "/", request.Original{Method: "M-SEARCH", Host: "h", Path: "/"}, nil},
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
