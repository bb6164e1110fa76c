package server

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
)

// TestMiddlewareRefusesOpaqueTarget: net/http hands a handler any absolute
// URI as the request target. "GET a:admin" arrives with an empty URL.Path
// (Go's ServeMux and most routers read it as "/") and "admin" in
// URL.Opaque, which URL.RequestURI, and so httputil.ReverseProxy, sends on;
// "ftp://h/admin" arrives with Path "/admin" under another scheme. With a
// public default and a strict /admin route, Middleware decided such a
// request under the default and let an anonymous client through to the
// application. It is now refused before the application runs (a token is
// asked for: 401 without one, 403 with one no policy was chosen for), as
// forward-auth refuses a target that is not a path.
func TestMiddlewareRefusesOpaqueTarget(t *testing.T) {
	e := publicDefault(t, policy.Route{Path: "/admin/**", Policy: "admin"}, policy.Route{Path: "/admin", Policy: "admin"})
	user := mint(claims(map[string]any{"groups": []string{"users"}}))
	for _, tt := range []struct {
		target string
		token  string
		want   int // 200: the application runs
	}{
		{"/", "", http.StatusOK},
		{"/admin", "", http.StatusUnauthorized},
		{"http://api.example.com/", "", http.StatusOK},
		{"a:admin", "", http.StatusUnauthorized},
		{"a:admin", user, http.StatusForbidden},
		{"http:admin", "", http.StatusUnauthorized},
		{"http:/admin", user, http.StatusForbidden}, // no host: RFC 9110 says reject
		{"A:admin", user, http.StatusForbidden},
		{"ftp://api.example.com/admin", "", http.StatusUnauthorized},
		{"ftp://api.example.com/", user, http.StatusForbidden},
	} {
		t.Run(tt.target, func(t *testing.T) {
			raw := "GET " + tt.target + " HTTP/1.1\r\nHost: api.example.com\r\n"
			if tt.token != "" {
				raw += "Authorization: Bearer " + tt.token + "\r\n"
			}
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + "\r\n")))
			if err != nil {
				t.Fatalf("net/http refuses %q: %v", tt.target, err)
			}
			ran := false
			h := e.srv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran = true }))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if ran != (tt.want == http.StatusOK) || w.Code != tt.want {
				t.Errorf("GET %s (token %v) = %d, the application ran = %v; want %d", tt.target, tt.token != "", w.Code, ran, tt.want)
			}
		})
	}
}

// TestAuthzRefusesControlBytesInOriginalURI: a header value may hold a tab
// or other bytes no request line carries; forward-auth decided
// "/public<TAB>x" as a path under /public's anonymous policy, though no
// proxy forwards such a request line and an application behind would read
// it another way. It is ambiguous: 401 without a token, 403 with one.
func TestAuthzRefusesControlBytesInOriginalURI(t *testing.T) {
	e := newPolicyEnv(t, nil)
	tok := mint(claims(map[string]any{"groups": []string{"admins"}}))
	for _, tt := range []struct {
		uri, token string
		want       int
	}{
		{"/public/x", "", http.StatusOK},
		{"/public/\tx", "", http.StatusUnauthorized},
		{"/public/ x", "", http.StatusUnauthorized},
		{"/public/x?a=\x7f", tok, http.StatusForbidden},
		{"/admin/x", tok, http.StatusOK},
		{"/admin/\x01", tok, http.StatusForbidden},
	} {
		w := do(e.handler, nginxAuthz("GET", tt.uri, tt.token, nil))
		if w.Code != tt.want {
			t.Errorf("X-Original-URI %q (token %v) = %d, want %d", tt.uri, tt.token != "", w.Code, tt.want)
		}
	}
}
