package service

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

// cgiView is the request headers as a CGI or FastCGI upstream reads them:
// HTTP_X_AUTH_SUBJECT for X-Auth-Subject and X_Auth_Subject alike, every
// value of every spelling.
func cgiView(h [][2]string) map[string][]string {
	out := map[string][]string{}
	for _, kv := range h {
		k := "HTTP_" + strings.ToUpper(strings.ReplaceAll(kv[0], "-", "_"))
		out[k] = append(out[k], kv[1])
	}
	return out
}

// applyEnvoyOK is what Envoy does with a gRPC OK answer: each header set
// (overwriting every copy of its name, any case), then headers_to_remove.
func applyEnvoyOK(client [][2]string, ok *authv3.OkHttpResponse) [][2]string {
	out := slices.Clone(client)
	for _, h := range ok.GetHeaders() {
		k := h.GetHeader().GetKey()
		out = slices.DeleteFunc(out, func(kv [2]string) bool { return strings.EqualFold(kv[0], k) })
		out = append(out, [2]string{k, h.GetHeader().GetValue()})
	}
	for _, k := range ok.GetHeadersToRemove() {
		out = slices.DeleteFunc(out, func(kv [2]string) bool { return strings.EqualFold(kv[0], k) })
	}
	return out
}

// applyEnvoyHTTPOK is what Envoy's HTTP ext_authz does with a 200: each
// allowed_upstream_headers header of the answer set over the request's,
// then the headers x-envoy-auth-headers-to-remove names removed.
func applyEnvoyHTTPOK(client [][2]string, answer http.Header, upstream []string) [][2]string {
	out := slices.Clone(client)
	for _, k := range upstream {
		if v, ok := answer[http.CanonicalHeaderKey(k)]; ok {
			out = slices.DeleteFunc(out, func(kv [2]string) bool { return strings.EqualFold(kv[0], k) })
			out = append(out, [2]string{k, v[0]})
		}
	}
	for _, v := range answer.Values("X-Envoy-Auth-Headers-To-Remove") {
		for k := range strings.SplitSeq(v, ",") {
			k = strings.TrimSpace(k)
			out = slices.DeleteFunc(out, func(kv [2]string) bool { return strings.EqualFold(kv[0], k) })
		}
	}
	return out
}

// TestFrontEndsHandTheUpstreamOneIdentity: on allow, what the application
// reads as an identity header (claims_to_headers) or the minted token is
// jwksverify's, and only jwksverify's, whichever front end decided, on
// jwksverify's answer alone (a hand-written proxy configuration that does
// not strip them first). The Middleware removes a client's copy and each
// CGI twin (X_Auth_Subject is HTTP_X_AUTH_SUBJECT to a CGI, FastCGI or WSGI
// application, as X-Auth-Subject is); gRPC Check's OK answer and the Envoy
// HTTP answer must leave the upstream the same, so their removals name the
// twins too: Envoy passes headers with '_' unless told to drop them.
func TestFrontEndsHandTheUpstreamOneIdentity(t *testing.T) {
	dir := mintKeysDir(t)
	s := startPlan(t, `state_dir: `+dir+`
forward_auth: {proxy: envoy}
mint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: k1, header: X-Internal-Token}
issuers:
  - issuer: https://a.example/
    jwks_file: jwks.json
    audiences: [orders]
    claims_to_headers: {sub: X-Auth-Subject}
policies:
  - {name: public, allow_anonymous: true}
  - {name: p, mint: {audience: internal}}
routes:
  - {path: /public/**, policy: public}
  - {path: /**, policy: p}
`, dir)
	gc := grpcClient(t, s)
	now := time.Now()
	alice := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	forged := [][2]string{{"x_auth_subject", "admin"}, {"x-auth_subject", "admin"}, {"x_internal_token", "forged"}}
	upstreamHeaders := []string{"x-auth-subject", "x-internal-token"} // allowed_upstream_headers
	for _, tt := range []struct{ name, path, token string }{
		{"token", "/orders/1", alice},
		{"anonymous", "/public/1", ""},
	} {
		client := slices.Clone(forged)
		if tt.token != "" {
			client = append(client, [2]string{"authorization", "Bearer " + tt.token})
		}
		seen := map[string][][2]string{}

		// gRPC Check, encode_raw_headers.
		hm := []*corev3.HeaderValue{{Key: ":authority", RawValue: []byte("api.example")}, {Key: ":path", RawValue: []byte(tt.path)}, {Key: ":method", RawValue: []byte("GET")}}
		for _, h := range client {
			hm = append(hm, &corev3.HeaderValue{Key: h[0], RawValue: []byte(h[1])})
		}
		resp, err := gc.Check(context.Background(), &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
			Http: &authv3.AttributeContext_HttpRequest{Method: "GET", Scheme: "https", Host: "api.example", Path: tt.path, HeaderMap: &corev3.HeaderMap{Headers: hm}}}}})
		if err != nil || resp.GetOkResponse() == nil {
			t.Fatalf("%s: gRPC Check = %v, %v; want OK", tt.name, resp, err)
		}
		seen["grpc"] = applyEnvoyOK(client, resp.GetOkResponse())

		// Forward-auth as Envoy's HTTP ext_authz calls it.
		r, ok := rawRequest("GET", "/v1/authz"+tt.path, "api.example", client)
		if !ok {
			t.Fatal("rawRequest")
		}
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: forward-auth = %d; want 200", tt.name, w.Code)
		}
		seen["authz/envoy"] = applyEnvoyHTTPOK(client, w.Header(), upstreamHeaders)

		// Service.Middleware in front of the application.
		r, _ = rawRequest("GET", tt.path, "api.example", client)
		var mw [][2]string
		h := s.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			for k, vs := range r.Header {
				for _, v := range vs {
					mw = append(mw, [2]string{k, v})
				}
			}
		}))
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: Middleware = %d; want 200", tt.name, w.Code)
		}
		seen["middleware"] = mw

		for fe, hs := range seen {
			v := cgiView(hs)
			if got := v["HTTP_X_AUTH_SUBJECT"]; slices.Contains(got, "admin") {
				t.Errorf("%s: behind %s the application reads HTTP_X_AUTH_SUBJECT = %q: the client's forged identity", tt.name, fe, got)
			}
			if got := v["HTTP_X_INTERNAL_TOKEN"]; slices.Contains(got, "forged") {
				t.Errorf("%s: behind %s the application reads the client's own HTTP_X_INTERNAL_TOKEN (%d values)", tt.name, fe, len(got))
			}
		}
	}
}
