package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
)

// envoyRoutesEnv: Envoy HTTP ext_authz preset; /users/*/admin needs the
// admin group, the rest of /users is anonymous.
func envoyRoutesEnv(t *testing.T) http.Handler {
	t.Helper()
	return newRoutedHandler(t, request.Envoy, policy.Options{
		Policies: adminAndPublic(),
		Routes: []policy.Route{
			{Path: "/users/*/admin/**", Policy: "admin"},
			{Path: "/users/**", Policy: "public"},
		},
		DefaultPolicy: "admin",
	}, nil)
}

// rawReq parses a request line as Go's HTTP server does (Envoy's HTTP
// ext_authz appends the original :path, as sent, to path_prefix).
func rawReq(t *testing.T, target string) *http.Request {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: api.example.com\r\n\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	r.RequestURI = target
	r.RemoteAddr = "127.0.0.1:1"
	return r
}

// TestEnvoyRawTarget: the Envoy preset routes the request target as Envoy
// sent it. Go's URL.EscapedPath rebuilds a path that holds a byte Go
// escapes ('|', '{', '^') from its decoded form, which turned "a%2Fb|" into
// "a/b%7C": the encoded '/' became a real one, the admin route missed and
// the anonymous one allowed a path the application reads as one segment.
func TestEnvoyRawTarget(t *testing.T) {
	h := envoyRoutesEnv(t)
	for _, tc := range []struct {
		target string
		want   int
	}{
		{"/v1/authz/users/42/admin/delete", 401},       // admin route, no token
		{"/v1/authz/users/a%2Fb/admin/delete", 401},    // encoded '/': ambiguous, refused
		{"/v1/authz/users/a%2Fb{/admin/delete", 401},   // same, plus a '{' Envoy's HTTP/1 codec accepts
		{"/v1/authz/users/a%2Fb%7B/admin/delete", 401}, // '{' escaped
		{"/v1/authz/users/42%2F{/admin/x", 401},
		{"/v1/authz/users/a%2Fb|/admin/delete", 401}, // '|' is outside WHATWG's path percent-encode set: kept by normalize_path
		{"/v1/authz/users/a%2Fb^/admin/delete", 401},
	} {
		w := httptest.NewRecorder()
		r := rawReq(t, tc.target)
		h.ServeHTTP(w, r)
		t.Logf("%s -> %d (URL.Path=%q EscapedPath=%q)", tc.target, w.Code, r.URL.Path, r.URL.EscapedPath())
		if w.Code != tc.want {
			t.Errorf("GET %s (no token) = %d, want %d", tc.target, w.Code, tc.want)
		}
	}
}

// TestEnvoyRawTargetOverTCP is TestEnvoyRawTarget over a real listener: Go's
// HTTP server accepts the raw '|' and the decision is the same.
func TestEnvoyRawTargetOverTCP(t *testing.T) {
	ts := httptest.NewServer(envoyRoutesEnv(t))
	defer ts.Close()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/authz/users/a%%2Fb|/admin/delete HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 401 {
		t.Errorf("GET /v1/authz/users/a%%2Fb|/admin/delete without a token = %d, want 401 (encoded '/' is ambiguous)", resp.StatusCode)
	}
}
