package request_test

import (
	"errors"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"

	"github.com/jwksverify/jwksverify/request"
)

// FuzzProxyHeaders reads a forward-auth call's headers as the Traefik and
// Caddy presets do (X-Forwarded-Method, -Uri, -Host, -Proto, and one more
// header a client sent, which the proxies pass on): both presets read it
// alike; the HTTP road (Proxy.From) answers as the gRPC road does
// (FromParts, then WithHeaderOverrides over the same headers); an error
// is ErrMissing or ErrAmbiguous*; and when the request is accepted, the
// method an application behind reads from a method-override header (a
// CGI or WSGI upstream: the name upper-cased, '-' read as '_'; Express:
// the value's first comma-separated item, upper-cased) is among the
// request's methods, so a policy decided for every method it will run as.
func FuzzProxyHeaders(f *testing.F) {
	for _, s := range [][6]string{
		{"GET", "https", "api.example.com", "/orders/1", "X-Http-Method-Override", "DELETE"},
		{"POST", "http", "h", "/a?x=1", "X_HTTP_METHOD_OVERRIDE", "put"},
		{"POST", "", "h:8080", "/", "x-method-override", "DELETE, GET"},
		{"get", "HTTPS", "H.example.", "/a/%2e%2e/b", "X-Http-Method", "PATCH"},
		{"POST", "https", "h", "/", "X-Http-Method-Overrides", "DELETE"},
		{"POST", "https", "h", "/", "X-Http-Method-Override", "DELETE!"},
		{"POST", "https", "h", "/", "X-Http-Method-Override", ""},
		{"POST", "https", "h", "/", "X-Forwarded-Method", "DELETE"},
		{"POST", "https", "h", "/?_method=PUT", "X-Http-Method-Override", "PATCH"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5])
	}
	f.Fuzz(func(t *testing.T, method, proto, host, uri, name, value string) {
		for _, v := range []string{method, proto, host, uri, value} {
			if !httpguts.ValidHeaderFieldValue(v) {
				return // net/http's server refuses such a header
			}
		}
		if !httpguts.ValidHeaderFieldName(name) {
			return
		}
		// What net/http's server hands a handler: names canonicalized,
		// values without leading and trailing blanks.
		trim := func(v string) string { return strings.Trim(v, " \t") }
		h := http.Header{}
		for _, kv := range [][2]string{{"X-Forwarded-Method", method}, {"X-Forwarded-Uri", uri}, {"X-Forwarded-Host", host}, {"X-Forwarded-Proto", proto}, {name, value}} {
			if kv[1] != "" || kv[0] != "X-Forwarded-Proto" {
				k := textproto.CanonicalMIMEHeaderKey(kv[0])
				h[k] = append(h[k], trim(kv[1]))
			}
		}
		r := &http.Request{Method: http.MethodGet, Header: h}
		o, err := request.Traefik.From(r, "")
		if o2, err2 := request.Caddy.From(r, ""); o2 != o || (err == nil) != (err2 == nil) {
			t.Fatalf("Caddy.From() = %+v, %v; Traefik.From() = %+v, %v", o2, err2, o, err)
		}
		if err != nil {
			if !errors.Is(err, request.ErrMissing) && !errors.Is(err, request.ErrAmbiguous) {
				t.Fatalf("From() error %v is neither ErrMissing nor ErrAmbiguous", err)
			}
		}
		// The gRPC road: the same parts, then the same headers as pairs.
		one := func(k string) (string, bool) {
			v := h[k]
			return strings.Join(v, ""), len(v) == 1
		}
		m, ok1 := one("X-Forwarded-Method")
		u, ok2 := one("X-Forwarded-Uri")
		hst, ok3 := one("X-Forwarded-Host")
		if !ok1 || !ok2 || !ok3 {
			if !errors.Is(err, request.ErrMissing) {
				t.Fatalf("From() = %+v, %v with a preset header absent or repeated; want ErrMissing", o, err)
			}
			return
		}
		p, _ := one("X-Forwarded-Proto")
		want, werr := request.FromParts(m, p, hst, u)
		if werr == nil {
			want, werr = want.WithHeaderOverrides(func(yield func(string, string) bool) {
				for k, vs := range h {
					for _, v := range vs {
						if !yield(k, v) {
							return
						}
					}
				}
			})
		}
		if want != o || (werr == nil) != (err == nil) {
			t.Fatalf("From() = %+v, %v; FromParts and WithHeaderOverrides give %+v, %v", o, err, want, werr)
		}
		if err != nil {
			return
		}
		has := func(m string) bool {
			for have := range o.Methods() {
				if have == m {
					return true
				}
			}
			return false
		}
		cgi := "HTTP_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		switch cgi {
		case "HTTP_X_HTTP_METHOD_OVERRIDE", "HTTP_X_HTTP_METHOD", "HTTP_X_METHOD_OVERRIDE":
		default:
			return
		}
		for _, read := range []string{trim(value), strings.Trim(strings.Split(trim(value), ",")[0], " ")} {
			up := strings.ToUpper(read)
			if up != "" && strings.Trim(up, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" && !has(up) {
				t.Fatalf("From() = %+v; an application reads method %q from %s: %q", o, up, name, value)
			}
		}
	})
}
