package request_test

import (
	"bufio"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"

	"github.com/jwksverify/jwksverify/request"
)

// FuzzFromRequest reads requests as net/http's server parses them from
// the wire (http.ReadRequest) with FromRequest, the middleware's reading
// of the request the handler serves: an error is ErrAmbiguous*; an
// accepted request's path, its escapes decoded, is the path the handler
// (Go's ServeMux, r.URL.Path; "/" for an absolute-form without one) acts
// on, its query the handler's, its host the Host header's as NormalizeHost
// reads it; and it is what FromParts reads from the same method, host and
// target.
func FuzzFromRequest(f *testing.F) {
	for _, s := range [][3]string{
		{"GET", "/orders/1?x=1", "api.example.com"}, {"POST", "/a%20b/%7Ec", "h:8080"}, {"GET", "/a/../b", "h"},
		{"GET", "/a%2fb", "h"}, {"get", "/", "H"}, {"GET", "http://other.example/x?y", "h"}, {"CONNECT", "h:443", "h:443"},
		{"GET", "*", "h"}, {"GET", "//x/y", "h"}, {"GET", "/%e2%82%ac?%zz", "[::1]:80"}, {"GET", "/a;b", "h"},
		{"GET", "HTTP://h", "h"}, {"GET", "http:/admin", "h"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, method, target, host string) {
		if strings.ContainsAny(method+target+host, "\r\n") {
			return // another request, or other headers
		}
		raw := method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil || !httpguts.ValidHostHeader(r.Host) {
			return // net/http's server refuses it
		}
		o, err := request.FromRequest(r)
		if err != nil {
			if !errors.Is(err, request.ErrAmbiguous) {
				t.Fatalf("FromRequest(%q) error %v is not ErrAmbiguous", raw, err)
			}
			return
		}
		acted := r.URL.Path
		if acted == "" && r.URL.Scheme != "" {
			acted = "/" // an absolute-form without a path: "/" (ServeMux redirects there)
		}
		if p, err := url.PathUnescape(o.Path); err != nil || p != acted {
			t.Fatalf("FromRequest(%q).Path = %q; the handler acts on %q", raw, o.Path, acted)
		}
		if o.RawQuery != r.URL.RawQuery {
			t.Fatalf("FromRequest(%q).RawQuery = %q; the handler reads %q", raw, o.RawQuery, r.URL.RawQuery)
		}
		if o.Host != request.NormalizeHost(r.Host) {
			t.Fatalf("FromRequest(%q).Host = %q; the Host header reads %q", raw, o.Host, request.NormalizeHost(r.Host))
		}
		want, werr := request.FromParts(r.Method, "http", r.Host, r.RequestURI)
		if werr != nil || want != o {
			t.Fatalf("FromRequest(%q) = %+v; FromParts reads %+v, %v", raw, o, want, werr)
		}
	})
}
