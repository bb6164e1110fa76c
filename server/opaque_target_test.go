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
