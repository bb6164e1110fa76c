package service

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/request"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

// frontEnds is one configuration — token sources of every kind, anonymous,
// method and host routes, a policy whose expression reads the request, a
// strict default_policy — served for one proxy preset, with its gRPC Check.
type frontEnds struct {
	proxy string
	svc   *Service
	grpc  authv3.AuthorizationClient
}

const frontEndsConfig = `revocation: {retention: 2h}
limits: {max_token_bytes: 4096}
issuers:
  - issuer: https://a.example/
    jwks_file: jwks.json
    audiences: [orders]
    leeway: 5s
token_sources: [{header: Authorization, prefix: "Bearer "}, {cookie: at}, {query: access_token}]
policies:
  - {name: public, allow_anonymous: true}
  - {name: orders-read, scopes: {any: [orders:read]}}
  - {name: orders-write, scopes: {all: [orders:write]}}
  - {name: admin, expression: 'claims.sub == "root" && request.method == "GET" && request.host == "admin.example"'}
  - {name: strict, scopes: {all: [nobody]}}
routes:
  - {path: /public/**, policy: public}
  - {methods: [HEAD], path: /healthz, policy: public}
  - {host: admin.example, path: /**, policy: admin}
  - {methods: [POST, PUT, PATCH, DELETE], path: /orders/**, policy: orders-write}
  - {path: /orders/**, policy: orders-read}
default_policy: strict
`

func newFrontEnds(t *testing.T, proxy string) *frontEnds {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jwks.json"), testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startPlan(t, "state_dir: "+dir+"\nforward_auth: {proxy: "+proxy+"}\n"+frontEndsConfig, dir)
	return &frontEnds{proxy: proxy, svc: s, grpc: grpcClient(t, s)}
}

// feRequest is the original request as a client sent it: method, host and
// target as on its request line, headers in order (a name may repeat).
type feRequest struct {
	method, host, target string
	headers              [][2]string
}

// rawRequest parses the request line and headers as net/http reads them
// from the wire; false when it would not accept them.
func rawRequest(method, target, host string, headers [][2]string) (*http.Request, bool) {
	var b strings.Builder
	b.WriteString(method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n")
	for _, h := range headers {
		b.WriteString(h[0] + ": " + h[1] + "\r\n")
	}
	b.WriteString("\r\n")
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(b.String())))
	if err != nil {
		return nil, false
	}
	r.RemoteAddr = "192.0.2.1:1234"
	return r, true
}

// feVerdict is what a front end answered: allowed, and the class.
type feVerdict struct {
	allowed bool
	class   string
}

// authz is forward-auth as the preset's proxy calls it.
func (f *frontEnds) authz(rq feRequest) (feVerdict, bool) {
	var r *http.Request
	var ok bool
	switch f.proxy {
	case "nginx":
		r, ok = rawRequest("GET", "/v1/authz", "jwksverify", append([][2]string{
			{"X-Original-Method", rq.method}, {"X-Original-Uri", rq.target}, {"X-Original-Host", rq.host}, {"X-Original-Proto", "https"},
		}, rq.headers...))
	case "traefik", "caddy":
		r, ok = rawRequest("GET", "/v1/authz", "jwksverify", append([][2]string{
			{"X-Forwarded-Method", rq.method}, {"X-Forwarded-Uri", rq.target}, {"X-Forwarded-Host", rq.host}, {"X-Forwarded-Proto", "https"},
		}, rq.headers...))
	case "envoy":
		r, ok = rawRequest(rq.method, "/v1/authz"+rq.target, rq.host, rq.headers)
	}
	if !ok {
		return feVerdict{}, false
	}
	w := httptest.NewRecorder()
	f.svc.Handler().ServeHTTP(w, r)
	return feVerdict{w.Code == http.StatusOK, challengeClass(w.Code, w.Header().Get("WWW-Authenticate"))}, true
}

// check is gRPC Check as Envoy sends it with encode_raw_headers: the
// pseudo-headers and every header in order (a repeated one repeated).
func (f *frontEnds) check(t *testing.T, rq feRequest) feVerdict {
	t.Helper()
	hm := []*corev3.HeaderValue{{Key: ":authority", RawValue: []byte(rq.host)}, {Key: ":path", RawValue: []byte(rq.target)}, {Key: ":method", RawValue: []byte(rq.method)}}
	for _, h := range rq.headers {
		hm = append(hm, &corev3.HeaderValue{Key: strings.ToLower(h[0]), RawValue: []byte(h[1])})
	}
	resp, err := f.grpc.Check(context.Background(), &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: rq.method, Scheme: "https", Host: rq.host, Path: rq.target, HeaderMap: &corev3.HeaderMap{Headers: hm},
		}},
	}})
	if err != nil {
		return feVerdict{false, "grpc:" + err.Error()}
	}
	if resp.GetOkResponse() != nil {
		return feVerdict{true, "valid"}
	}
	den := resp.GetDeniedResponse()
	var ch string
	for _, h := range den.GetHeaders() {
		if strings.EqualFold(h.GetHeader().GetKey(), "WWW-Authenticate") {
			ch = h.GetHeader().GetValue()
		}
	}
	return feVerdict{false, challengeClass(int(den.GetStatus().GetCode()), ch)}
}

// checkMap is gRPC Check as Envoy sends it by default: the headers map,
// a repeated header joined with "," (Cookie with "; ").
func (f *frontEnds) checkMap(t *testing.T, rq feRequest) feVerdict {
	t.Helper()
	hs := map[string]string{":authority": rq.host, ":path": rq.target, ":method": rq.method}
	for _, h := range rq.headers {
		k := strings.ToLower(h[0])
		if old, ok := hs[k]; ok {
			sep := ","
			if k == "cookie" {
				sep = "; "
			}
			hs[k] = old + sep + h[1]
			continue
		}
		hs[k] = h[1]
	}
	resp, err := f.grpc.Check(context.Background(), &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: rq.method, Scheme: "https", Host: rq.host, Path: rq.target, Headers: hs,
		}},
	}})
	if err != nil {
		return feVerdict{false, "grpc:" + err.Error()}
	}
	if resp.GetOkResponse() != nil {
		return feVerdict{true, "valid"}
	}
	den := resp.GetDeniedResponse()
	var ch string
	for _, h := range den.GetHeaders() {
		if strings.EqualFold(h.GetHeader().GetKey(), "WWW-Authenticate") {
			ch = h.GetHeader().GetValue()
		}
	}
	return feVerdict{false, challengeClass(int(den.GetStatus().GetCode()), ch)}
}

// middleware is Service.Middleware in front of a handler of the
// application, the request read from the wire over TLS.
func (f *frontEnds) middleware(t *testing.T, rq feRequest) (feVerdict, bool) {
	t.Helper()
	r, ok := rawRequest(rq.method, rq.target, rq.host, rq.headers)
	if !ok {
		return feVerdict{}, false
	}
	r.TLS = &tls.ConnectionState{}
	h := f.svc.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return feVerdict{w.Code == http.StatusOK, challengeClass(w.Code, w.Header().Get("WWW-Authenticate"))}, true
}

// frontEndClaims returns claims of https://a.example/ valid now, with over
// applied (nil deletes).
func frontEndClaims(over map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// TestFrontEndsAgree sends the same original request through forward-auth
// of every proxy preset, gRPC Check and Service.Middleware under one
// configuration: each must reach the same verdict and class. A row that a
// front end's transport cannot carry (net/http refuses the request line)
// is not compared there.
func TestFrontEndsAgree(t *testing.T) {
	reader := mintRS256(frontEndClaims(nil))
	writer := mintRS256(frontEndClaims(map[string]any{"scope": "orders:read orders:write"}))
	root := mintRS256(frontEndClaims(map[string]any{"sub": "root", "scope": ""}))
	expired := mintRS256(frontEndClaims(map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}))
	bearer := func(tok string) [][2]string { return [][2]string{{"Authorization", "Bearer " + tok}} }
	allow := feVerdict{true, "valid"}
	forbidden := feVerdict{false, "forbidden"}
	missing := feVerdict{false, "missing_token"}
	malformed := feVerdict{false, "malformed"}
	tests := []struct {
		name string
		rq   feRequest
		want feVerdict
	}{
		{"read", feRequest{"GET", "api.example", "/orders/1", bearer(reader)}, allow},
		{"read-lower-bearer", feRequest{"GET", "api.example", "/orders/1", [][2]string{{"Authorization", "bearer " + reader}}}, allow},
		{"write-as-reader", feRequest{"POST", "api.example", "/orders/1", bearer(reader)}, forbidden},
		{"write-as-writer", feRequest{"DELETE", "api.example", "/orders/1", bearer(writer)}, allow},
		{"override-header", feRequest{"GET", "api.example", "/orders/1", append(bearer(reader), [2]string{"X-HTTP-Method-Override", "DELETE"})}, forbidden},
		{"override-query", feRequest{"GET", "api.example", "/orders/1?_method=DELETE", bearer(reader)}, forbidden},
		{"override-query-anon", feRequest{"GET", "api.example", "/public/x?_method=DELETE", nil}, allow},
		{"head-as-get", feRequest{"HEAD", "api.example", "/orders/1", bearer(reader)}, allow},
		// A route that names HEAD decides a HEAD alone (POLICIES.md).
		{"head-healthz-anon", feRequest{"HEAD", "api.example", "/healthz", nil}, allow},
		{"get-healthz", feRequest{"GET", "api.example", "/healthz", bearer(reader)}, forbidden},
		{"anon-public", feRequest{"GET", "api.example", "/public/x", nil}, allow},
		{"anon-public-expired", feRequest{"GET", "api.example", "/public/x", bearer(expired)}, feVerdict{false, "expired"}},
		{"anon-orders", feRequest{"GET", "api.example", "/orders/1", nil}, missing},
		{"unreserved-escape", feRequest{"GET", "api.example", "/%70ublic/x", nil}, missing},
		{"encoded-slash", feRequest{"GET", "api.example", "/public%2Fx", nil}, missing},
		{"dot-segment", feRequest{"GET", "api.example", "/public/../orders/1", nil}, missing},
		{"double-slash", feRequest{"GET", "api.example", "//public/x", nil}, missing},
		{"semicolon", feRequest{"GET", "api.example", "/public;x/y", bearer(reader)}, forbidden},
		{"host-port", feRequest{"GET", "admin.example:8443", "/x", bearer(root)}, allow},
		{"host-upper", feRequest{"GET", "Admin.example", "/x", bearer(root)}, forbidden},
		{"host-admin-other-sub", feRequest{"GET", "admin.example", "/public/x", nil}, allow},
		{"host-admin-reader", feRequest{"GET", "admin.example", "/orders/1", bearer(reader)}, forbidden},
		{"method-lower", feRequest{"get", "api.example", "/orders/1", bearer(reader)}, forbidden},
		{"method-lower-anon", feRequest{"get", "api.example", "/public/x", nil}, missing},
		{"cookie", feRequest{"GET", "api.example", "/orders/1", [][2]string{{"Cookie", "at=" + reader}}}, allow},
		{"cookie-twice", feRequest{"GET", "api.example", "/orders/1", [][2]string{{"Cookie", "at=" + reader}, {"Cookie", "at=" + reader}}}, malformed},
		{"query-token", feRequest{"GET", "api.example", "/orders/1?access_token=" + reader, nil}, allow},
		{"query-and-header", feRequest{"GET", "api.example", "/orders/1?access_token=" + writer, bearer(reader)}, malformed},
		{"two-authorization", feRequest{"GET", "api.example", "/orders/1", append(bearer(reader), bearer(reader)...)}, malformed},
		{"bearer-two-spaces", feRequest{"GET", "api.example", "/public/x", [][2]string{{"Authorization", "Bearer  " + reader}}}, malformed},
		{"bearer-empty", feRequest{"GET", "api.example", "/public/x", [][2]string{{"Authorization", "Bearer "}}}, malformed},
		{"basic-on-public", feRequest{"GET", "api.example", "/public/x", [][2]string{{"Authorization", "Basic dTpw"}}}, allow},
		{"dpop-scheme-off", feRequest{"GET", "api.example", "/orders/1", [][2]string{{"Authorization", "DPoP " + reader}}}, malformed}, // no issuer has a DPoP constraint
		{"default-policy", feRequest{"GET", "api.example", "/other", bearer(reader)}, forbidden},
		{"default-policy-fragment", feRequest{"GET", "api.example", "/public/x#y", nil}, missing},
		{"query-empty", feRequest{"GET", "api.example", "/orders/1?", bearer(reader)}, allow},
	}
	for _, proxy := range []string{"nginx", "traefik", "caddy", "envoy"} {
		f := newFrontEnds(t, proxy)
		for _, tt := range tests {
			got := map[string]feVerdict{"grpc": f.check(t, tt.rq)}
			if v, ok := f.authz(tt.rq); ok {
				got["authz/"+proxy] = v
			}
			if v, ok := f.middleware(t, tt.rq); ok {
				got["service-middleware"] = v
			}
			for ep, v := range got {
				if v != tt.want {
					t.Errorf("%s/%s: %s = %+v, want %+v", proxy, tt.name, ep, v, tt.want)
				}
			}
		}
	}
}

// TestFrontEndsAgreeCombinations crosses methods, hosts, targets and
// credentials, and holds every front end to the nginx preset's verdict.
func TestFrontEndsAgreeCombinations(t *testing.T) {
	if testing.Short() {
		t.Skip("about 8000 requests through five front ends")
	}
	reader := mintRS256(frontEndClaims(nil))
	writer := mintRS256(frontEndClaims(map[string]any{"scope": "orders:read orders:write"}))
	root := mintRS256(frontEndClaims(map[string]any{"sub": "root", "scope": ""}))
	methods := []string{"GET", "HEAD", "POST", "DELETE", "get", "Delete", "OPTIONS", "CONNECT", "TRACE", "PROPFIND"}
	hosts := []string{"api.example", "admin.example", "admin.example:8443", "admin.example:443", "ADMIN.example", "admin.example.", "127.0.0.1", "[::1]:80", "", "admin.example:", "admin.example:0080", "admin.example:99999"}
	targets := []string{"/", "/orders/1", "/public/x", "/healthz", "/other", "/%70ublic/x", "/public/%6Frders", "/orders/1?_method=DELETE",
		"/public/x?_method=DELETE", "/public/x?_METHOD=POST", "/orders/1?x=1&access_token=" + reader, "/public/x?access%5Ftoken=" + reader,
		"/orders", "/orders/", "/ORDERS/1", "/public", "/public/", "/public/x/", "/public/~x", "/public/%7ex", "/orders/%2e", "/*",
		"*", "http://admin.example/public/x", "https://api.example/orders/1", "/public/x?%5Fmethod=DELETE", "/public/x?_method[]=DELETE",
		"/public/%E2%82%AC", "/public/\u20ac", "/public/x?a=%ZZ", "/public/x?", "/healthz?_method=HEAD", "/public/x?_method=HEAD"}
	creds := [][][2]string{
		nil,
		{{"Authorization", "Bearer " + reader}},
		{{"Authorization", "Bearer " + writer}},
		{{"Authorization", "Bearer " + root}},
		{{"Cookie", "at=" + root}},
		{{"Authorization", "Bearer " + writer}, {"X-HTTP-Method-Override", "DELETE"}},
		{{"Authorization", "Bearer " + reader}, {"X-Http-Method", "PUT"}},
		{{"X-Method-Override", "GET"}},
		{{"X_HTTP_Method_Override", "DELETE"}},
		{{"Authorization", "Basic dTpw"}},
		{{"Cookie", "at="}},
		{{"Cookie", "a=b"}, {"Cookie", "at=" + root}},
	}
	svcs := map[string]*frontEnds{}
	for _, p := range []string{"nginx", "traefik", "envoy"} {
		svcs[p] = newFrontEnds(t, p)
	}
	// Every method, host and target, each with two of the credential
	// sets in turn: the whole cross product (about 50 000 requests) took
	// over a minute under -race.
	n, bad, turn := 0, 0, 0
	for _, m := range methods {
		for _, h := range hosts {
			for _, tg := range targets {
				turn++
				for _, ci := range [2]int{turn % len(creds), (turn + len(creds)/2) % len(creds)} {
					cr := creds[ci]
					rq := feRequest{m, h, tg, cr}
					ref, ok := svcs["nginx"].authz(rq)
					if !ok {
						continue
					}
					n++
					got := map[string]feVerdict{}
					for _, p := range []string{"traefik", "envoy"} {
						if p == "envoy" && !strings.HasPrefix(tg, "/") {
							continue // Envoy appends an origin-form path
						}
						if v, ok := svcs[p].authz(rq); ok {
							got["authz/"+p] = v
						}
					}
					got["grpc"] = svcs["nginx"].check(t, rq)
					got["grpc-map"] = svcs["nginx"].checkMap(t, rq)
					if v, ok := svcs["nginx"].middleware(t, rq); ok && m != "CONNECT" && (strings.HasPrefix(tg, "/") || strings.Contains(tg, "//"+h+"/")) {
						got["service-middleware"] = v
					}
					for ep, v := range got {
						if v != ref && bad < 60 {
							bad++
							t.Errorf("%s %q %q creds[%d]: %s = %+v, authz/nginx = %+v", m, h, tg, ci, ep, v, ref)
						}
					}
				}
			}
		}
	}
	t.Logf("%d requests compared", n)
}

// TestVerifyJSONAgreesWithForwardAuth: /v1/verify naming the policy the
// routes choose, with the original request in "request", reaches the
// forward-auth verdict for a request whose only credential is a bearer
// token and that no other method reading (HEAD, overrides) decides too.
func TestVerifyJSONAgreesWithForwardAuth(t *testing.T) {
	toks := []string{mintRS256(frontEndClaims(nil)), mintRS256(frontEndClaims(map[string]any{"scope": "orders:read orders:write"})),
		mintRS256(frontEndClaims(map[string]any{"sub": "root", "scope": ""}))}
	f := newFrontEnds(t, "nginx")
	set := f.svc.Plan().Server.Policies
	n := 0
	for _, m := range []string{"GET", "POST", "DELETE", "get", "PROPFIND"} {
		for _, h := range []string{"api.example", "admin.example", "admin.example:8443", "ADMIN.example", "", "127.0.0.1"} {
			for _, tg := range []string{"/", "/orders/1", "/public/x", "/other", "/%70ublic/x", "/orders/%31", "/orders/1?x=1", "/public/../x", "/public/x#y", "/orders;1"} {
				for _, tok := range toks {
					rq := feRequest{m, h, tg, [][2]string{{"Authorization", "Bearer " + tok}}}
					ref, ok := f.authz(rq)
					if !ok {
						continue
					}
					o, oerr := request.FromParts(m, "https", h, tg)
					ch, err := set.Choose("", o, oerr)
					if err != nil || ch.Policy == nil {
						continue
					}
					n++
					body := `{"token":` + jsonQuote(tok) + `,"policy":` + jsonQuote(ch.Policy.Name()) + `,"request":{"method":` + jsonQuote(m) +
						`,"scheme":"https","host":` + jsonQuote(h) + `,"path":` + jsonQuote(tg) + `}}`
					r := httptest.NewRequest(http.MethodPost, "/v1/verify", strings.NewReader(body))
					r.Header.Set("Content-Type", "application/json")
					w := httptest.NewRecorder()
					f.svc.Handler().ServeHTTP(w, r)
					var v struct {
						Valid   bool   `json:"valid"`
						Allowed *bool  `json:"allowed"`
						Error   string `json:"error"`
					}
					_ = json.Unmarshal(w.Body.Bytes(), &v)
					got := feVerdict{v.Valid && v.Allowed != nil && *v.Allowed, v.Error}
					if got.allowed {
						got.class = "valid"
					}
					if got != ref {
						t.Errorf("%s %q %q policy %s: /v1/verify = %+v (%d %s), authz/nginx = %+v", m, h, tg, ch.Policy.Name(), got, w.Code, w.Body, ref)
					}
				}
			}
		}
	}
	t.Logf("%d requests compared", n)
}
