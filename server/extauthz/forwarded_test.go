package extauthz

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/server"
)

// adminSet: DELETE anywhere, the admin host and /admin/** need orders:admin
// (which the test token lacks); everything else any token; /public/** is
// anonymous.
func adminSet(t *testing.T) *policy.Set {
	t.Helper()
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{
			{Name: "admin", Scopes: policy.Scopes{All: []string{"orders:admin"}}},
			{Name: "public", AllowAnonymous: true},
			{Name: "any"},
		},
		Routes: []policy.Route{
			{Host: "admin.example.com", Policy: "admin"},
			{Methods: []string{"DELETE"}, Path: "/**", Policy: "admin"},
			{Path: "/admin/**", Policy: "admin"},
			{Path: "/public/**", Policy: "public"},
			{Path: "/**", Policy: "any"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// deniedStatus is the HTTP status of a DENIED answer, 0 for another.
func deniedStatus(resp *authv3.CheckResponse, err error) int {
	if err != nil || resp.GetDeniedResponse() == nil {
		return 0
	}
	return int(resp.GetDeniedResponse().GetStatus().GetCode())
}

// A CheckRequest that carries both header forms could be read two ways
// (it was decided on header_map alone, whatever the headers map said): it
// is malformed, 401, whichever form holds what.
func TestBothHeaderFormsRefused(t *testing.T) {
	a := rtServer(t, server.Options{}, adminSet(t))
	tok := mint(claims(nil))
	forged := tokens()["bad-signature"]
	tests := []struct {
		name    string
		path    string
		headers map[string]string
		raw     []*corev3.HeaderValue
	}{
		{"override-only-in-headers", "/orders/1",
			map[string]string{"authorization": "Bearer " + tok, "x-http-method-override": "DELETE"},
			[]*corev3.HeaderValue{{Key: "authorization", RawValue: []byte("Bearer " + tok)}}},
		{"override-only-in-header-map", "/orders/1",
			map[string]string{"authorization": "Bearer " + tok},
			[]*corev3.HeaderValue{{Key: "authorization", RawValue: []byte("Bearer " + tok)}, {Key: "X-HTTP-Method-Override", RawValue: []byte("delete")}}},
		{"credential-only-in-headers", "/public/x",
			map[string]string{"authorization": "Bearer " + forged},
			[]*corev3.HeaderValue{{Key: "user-agent", RawValue: []byte("curl")}}},
		{"other-token-in-headers", "/orders/1",
			map[string]string{"authorization": "Bearer " + forged},
			[]*corev3.HeaderValue{{Key: "authorization", RawValue: []byte("Bearer " + tok)}}},
		{"same-in-both", "/orders/1", bearer(tok),
			[]*corev3.HeaderValue{{Key: "authorization", RawValue: []byte("Bearer " + tok)}}},
		// header_map present but empty: it is the form read, so the
		// headers map was ignored whole, a forged credential and an
		// override in it passed an anonymous route undecided.
		{"credential-beside-empty-header-map", "/public/x",
			map[string]string{"authorization": "Bearer " + forged}, nil},
		{"override-beside-empty-header-map", "/public/x",
			map[string]string{"x-http-method-override": "DELETE"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := envoyRequest("POST", tt.path, tt.headers)
			req.Attributes.Request.Http.HeaderMap = &corev3.HeaderMap{Headers: tt.raw}
			resp, err := a.Check(t.Context(), req)
			wantMalformed(t, resp, err)
		})
	}
}

// wantMalformed fails t unless the Check was refused as malformed: 401,
// UNAUTHENTICATED, the class in the body.
func wantMalformed(t *testing.T, resp *authv3.CheckResponse, err error) {
	t.Helper()
	if c, st := code(resp, err), deniedStatus(resp, err); c != codes.Unauthenticated || st != 401 || !strings.Contains(string(resp.GetDeniedResponse().GetBody()), "malformed") {
		t.Errorf("Check() = %v %d %s, want UNAUTHENTICATED 401 malformed", c, st, resp.GetDeniedResponse().GetBody())
	}
}

// A headers map whose names are not lower case is malformed: the map is
// read by lower-case name (as Envoy sends it), so such a name went unread
// while the upstream reads it: a forged credential passed an anonymous
// route, an override or a :PATH escaped the checks.
func TestHeaderMapNameCaseRefused(t *testing.T) {
	a := rtServer(t, server.Options{}, adminSet(t))
	tok := mint(claims(nil))
	forged := tokens()["bad-signature"]
	tests := []struct {
		name    string
		path    string
		headers map[string]string
		ok      bool
	}{
		{"lower-case", "/orders/1", map[string]string{"authorization": "Bearer " + tok, "x-request-id": "1"}, true},
		{"credential", "/public/x", map[string]string{"Authorization": "Bearer " + forged}, false},
		{"override", "/public/x", map[string]string{"X-HTTP-Method-Override": "DELETE"}, false},
		{"pseudo-header", "/orders/1", map[string]string{"authorization": "Bearer " + tok, ":PATH": "/admin/x"}, false},
		{"other-header", "/orders/1", map[string]string{"authorization": "Bearer " + tok, "X-Request-Id": "1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := a.Check(t.Context(), envoyRequest("GET", tt.path, tt.headers))
			if tt.ok {
				if c := code(resp, err); c != codes.OK {
					t.Fatalf("Check() = %v %s, want OK", c, resp.GetDeniedResponse().GetBody())
				}
				return
			}
			wantMalformed(t, resp, err)
		})
	}
}

// The pseudo-headers Envoy forwards (and a host header an HTTP/2 client
// sent beside :authority, which an Envoy before 1.28 kept) must spell the
// attributes the request is decided on, or the upstream could read another
// request: the admin host, path or method behind a lax route's decision.
func TestForwardedHeadersAsDecided(t *testing.T) {
	a := rtServer(t, server.Options{}, adminSet(t))
	tok := mint(claims(nil))
	tests := []struct {
		name   string
		h      map[string]string
		status int // 0: allowed
	}{
		{"as-decided", nil, 0},
		{"host-header-same", map[string]string{"host": "app.example.com"}, 0},
		{"host-header", map[string]string{"host": "admin.example.com"}, 403},
		{"host-header-case", map[string]string{"host": "APP.example.com"}, 403},
		{"authority", map[string]string{":authority": "admin.example.com"}, 403},
		{"path", map[string]string{":path": "/admin/x"}, 403},
		{"method", map[string]string{":method": "DELETE"}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := bearer(tok)
			for k, v := range tt.h {
				h[k] = v
			}
			for _, form := range []string{"headers", "header_map"} {
				req := envoyRequest("GET", "/orders/1", h)
				req.Attributes.Request.Http.Host = "app.example.com"
				if form == "header_map" {
					req = rawHeaders(req)
				}
				resp, err := a.Check(t.Context(), req)
				c, st := code(resp, err), deniedStatus(resp, err)
				switch {
				case tt.status == 0 && c != codes.OK:
					t.Errorf("%s: Check() = %v %d %s, want OK", form, c, st, resp.GetDeniedResponse().GetBody())
				case tt.status != 0 && st != tt.status:
					t.Errorf("%s: Check() = %v %d %s, want DENIED %d", form, c, st, resp.GetDeniedResponse().GetBody(), tt.status)
				}
			}
		})
	}
}

// A query naming more methods than request.MaxOverrides with _method is
// ambiguous: thousands of them cost a Check seconds of CPU before any token
// was read, and an anonymous route let the request through.
func TestManyOverridesRefused(t *testing.T) {
	a := rtServer(t, server.Options{}, adminSet(t))
	var q []string
	for i := range 5000 {
		q = append(q, "_method=M"+strings.Repeat("X", i%7)+string(rune('A'+i%26))+string(rune('A'+i/26%26)))
	}
	for _, path := range []string{"/public/x", "/orders/1"} {
		req := envoyRequest("GET", path+"?"+strings.Join(q, "&"), bearer(mint(claims(nil))))
		resp, err := a.Check(t.Context(), req)
		if c, st := code(resp, err), deniedStatus(resp, err); c == codes.OK || st != 403 {
			t.Errorf("%s with %d _method values: Check() = %v %d, want DENIED 403", path, len(q), c, st)
		}
	}
}

// The header_map form's names are matched ignoring ASCII case only, as
// the headers form's lower-cased names and Envoy's are: a "coo\u212aie"
// (the Kelvin sign, U+212A) is no Cookie to Envoy or the upstream, and its
// token was read as the cookie source's.
func TestHeaderMapKeyFoldsASCIIOnly(t *testing.T) {
	a := rtServer(t, server.Options{TokenSources: []server.TokenSource{{Cookie: "at"}}}, adminSet(t))
	tok := mint(claims(nil))
	tests := []struct {
		name, key string
		want      codes.Code
	}{
		{"cookie", "cookie", codes.OK},
		{"cookie-upper", "Cookie", codes.OK},
		{"cookie-kelvin", "coo\u212aie", codes.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := rawHeaders(envoyRequest("GET", "/orders/1", nil), [2]string{tt.key, "at=" + tok})
			if resp, err := a.Check(t.Context(), req); code(resp, err) != tt.want {
				t.Errorf("Check(%q: at=<token>) = %v %s, want %v", tt.key, code(resp, err), resp.GetDeniedResponse().GetBody(), tt.want)
			}
		})
	}
}
