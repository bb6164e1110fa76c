package server

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/policy/celexpr"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// newPolicyEnv is a server behind nginx with the policies of POLICIES.md's
// example: orders read/write by scope, admin by group, public anonymous.
func newPolicyEnv(t testing.TB, rm *ResourceMetadata) *env {
	t.Helper()
	return newPolicyEnvWith(t, rm, nil)
}

// newPolicyEnvWith is newPolicyEnv with more options: edit, when not nil,
// changes the server's before New.
func newPolicyEnvWith(t testing.TB, rm *ResourceMetadata, edit func(*Options)) *env {
	t.Helper()
	set, err := policy.New(policy.Options{
		Compiler: &celexpr.Compiler{},
		Policies: []policy.Spec{
			{Name: "orders-read", Scopes: policy.Scopes{Any: []string{"orders:read", "orders:write"}}},
			{Name: "orders-write", Scopes: policy.Scopes{All: []string{"orders:write"}}},
			{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
			{Name: "public", AllowAnonymous: true},
			{Name: "allow"},
			{Name: "deny", Expression: `claims.sub == "nobody"`},
			{Name: "no-delete", Expression: `request.method != "DELETE"`},
		},
		Routes: []policy.Route{
			{Methods: []string{"POST", "PUT", "PATCH", "DELETE"}, Path: "/orders/**", Policy: "orders-write"},
			{Path: "/orders/**", Policy: "orders-read"},
			{Path: "/admin/**", Policy: "admin"},
			{Path: "/public/**", Policy: "public"},
			{Methods: []string{"GET"}, Path: "/docs/**", Policy: "public"},
			{Path: "/docs/**", Policy: "admin"},
		},
		DefaultPolicy: "admin",
	})
	if err != nil {
		t.Fatal(err)
	}
	// The verifier indexes the claims the policies read, as the config plan
	// has it (verify.Options.IndexClaims = set.ClaimNames()).
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 100, IndexClaims: set.ClaimNames()})
	e := &env{clock: ve.Clock, keysA: ve.KeysA, keysD: ve.KeysD, v: ve.V, logs: ve.Logs, metrics: &recordedMetrics{}}
	o := Options{
		Verifier: ve.V, ClaimsToHeaders: servertest.ClaimsToHeaders(), Proxy: request.Nginx, Policies: set,
		ResourceMetadata: rm, Metrics: e.metrics, Logger: slog.New(slog.NewJSONHandler(e.logs, nil)), Now: e.clock.Now,
	}
	if edit != nil {
		edit(&o)
	}
	e.srv, err = New(o)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	e.handler = e.srv.Handler()
	return e
}

func nginxAuthz(method, uri, token string, extra map[string]string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
	r.Header.Set("X-Original-Method", method)
	r.Header.Set("X-Original-Uri", uri)
	r.Header.Set("X-Original-Host", "api.example.com")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range extra {
		if v == "" {
			r.Header.Del(k)
			continue
		}
		r.Header.Set(k, v)
	}
	return r
}

func TestAuthzPolicies(t *testing.T) {
	e := newPolicyEnv(t, nil)
	read := mint(claims(map[string]any{"scope": "orders:read"}))
	none := mint(claims(map[string]any{"scope": nil}))
	admin := mint(claims(map[string]any{"scope": nil, "groups": []string{"admins"}}))
	expired := tokens()["expired"]
	tests := []struct {
		name       string
		req        *http.Request
		wantStatus int
		wantWWW    string
		wantPolicy string
	}{
		{"read-get-order", nginxAuthz("GET", "/orders/1", read, nil), 200, "", "orders-read"},
		{"read-post-orders", nginxAuthz("POST", "/orders", read, nil), 403, `Bearer error="insufficient_scope", scope="orders:write"`, "orders-write"},
		// A lower-case method is ambiguous: Django and Flask upper-case it
		// (the write route's), Go's ServeMux runs it as sent (no "DELETE
		// /orders/{id}" pattern's). Never the read route's.
		{"read-delete-lower-case", nginxAuthz("delete", "/orders/1", read, nil), 403, `Bearer error="insufficient_scope"`, ""},
		{"no-scopes-order", nginxAuthz("GET", "/orders/1", none, nil), 403, `Bearer error="insufficient_scope", scope="orders:read orders:write"`, "orders-read"},
		{"no-scopes-public", nginxAuthz("GET", "/public", none, nil), 200, "", "public"},
		{"anonymous-public", nginxAuthz("GET", "/public/x", "", nil), 200, "", "public"},
		{"anonymous-order", nginxAuthz("GET", "/orders/1", "", nil), 401, `Bearer realm="jwksverify"`, "orders-read"},
		{"expired-public", nginxAuthz("GET", "/public", expired, nil), 401, `Bearer error="invalid_token", error_description="expired"`, "public"},
		// Dot and empty segments are ambiguous (an application's router may
		// read them otherwise): denied whatever the routes or the token.
		{"dotdot-denied", nginxAuthz("GET", "/public/../admin", read, nil), 403, `Bearer error="insufficient_scope"`, ""},
		{"encoded-dotdot-denied", nginxAuthz("GET", "/public/%2e%2e/admin", read, nil), 403, `Bearer error="insufficient_scope"`, ""},
		{"dotdot-anonymous-401", nginxAuthz("GET", "/admin/%2e%2e/public/x", "", nil), 401, `Bearer realm="jwksverify"`, ""},
		{"empty-segment-anonymous-401", nginxAuthz("GET", "//public/admin/x", "", nil), 401, `Bearer realm="jwksverify"`, ""},
		{"empty-segment-denied", nginxAuthz("GET", "/admin//../public/x", admin, nil), 403, `Bearer error="insufficient_scope"`, ""},
		{"unreserved-decoded", nginxAuthz("GET", "/public/%7e/x", "", nil), 200, "", "public"},
		{"encoded-slash-denied", nginxAuthz("GET", "/public%2F..%2Fadmin", read, nil), 403, `Bearer error="insufficient_scope"`, ""},
		{"encoded-slash-anonymous-401", nginxAuthz("GET", "/public/..%2Fadmin", "", nil), 401, `Bearer realm="jwksverify"`, ""},
		{"backslash-denied", nginxAuthz("GET", "/public/..\\admin", admin, nil), 403, `Bearer error="insufficient_scope"`, ""},
		{"climb-denied", nginxAuthz("GET", "/public/../../admin", admin, nil), 403, `Bearer error="insufficient_scope"`, ""},
		{"admin-admin", nginxAuthz("GET", "/admin/x", admin, nil), 200, "", "admin"},
		{"admin-dotdot-denied", nginxAuthz("GET", "/public/../admin/x", admin, nil), 403, `Bearer error="insufficient_scope"`, ""},
		// A method override is decided for its own method and every method
		// it names: POST /orders/1 that Rails runs as DELETE needs
		// orders:write, a GET that an app runs as DELETE too.
		{"override-header-refused", nginxAuthz("GET", "/orders/1", read, map[string]string{"X-Http-Method-Override": "DELETE"}), 403, `Bearer error="insufficient_scope", scope="orders:write"`, "orders-write"},
		{"override-cgi-twin-refused", nginxAuthz("GET", "/orders/1", read, map[string]string{"X_http_method_override": "DELETE"}), 403, `Bearer error="insufficient_scope", scope="orders:write"`, "orders-write"},
		{"override-query-refused", nginxAuthz("GET", "/orders/1?_method=DELETE", read, nil), 403, `Bearer error="insufficient_scope", scope="orders:write"`, "orders-write"},
		{"override-x-http-method-refused", nginxAuthz("GET", "/orders/1", read, map[string]string{"X-Http-Method": "put"}), 403, `Bearer error="insufficient_scope", scope="orders:write"`, "orders-write"},
		{"override-same-method-allowed", nginxAuthz("GET", "/orders/1?_method=GET", read, nil), 200, "", "orders-read"},
		{"override-not-a-token", nginxAuthz("GET", "/orders/1", admin, map[string]string{"X-Method-Override": "DELETE PUT"}), 403, `Bearer error="insufficient_scope"`, ""},
		{"override-anonymous-same-policy", nginxAuthz("GET", "/public/x?_method=DELETE", "", nil), 200, "", "public"},
		{"override-anonymous-401", nginxAuthz("GET", "/docs/x?_method=DELETE", "", nil), 401, `Bearer realm="jwksverify"`, "public"},
		{"override-header-anonymous-401", nginxAuthz("GET", "/docs/x", "", map[string]string{"X-Http-Method-Override": "PUT"}), 401, `Bearer realm="jwksverify"`, "public"},
		{"anonymous-docs", nginxAuthz("GET", "/docs/x", "", nil), 200, "", "public"},
		{"override-to-admin-anonymous", nginxAuthz("POST", "/public/x", "", map[string]string{"X-Http-Method-Override": "GET"}), 200, "", "public"},
		// A Bearer or DPoP credential that is not exactly "<scheme> <token>"
		// is malformed, anonymous routes included: an application could
		// read a token in it that was never verified.
		{"bearer-tab-anonymous", nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": "Bearer\t" + read}), 401, `Bearer error="invalid_token", error_description="malformed"`, "public"},
		{"bearer-colon-anonymous", nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": "Bearer:" + read}), 401, `Bearer error="invalid_token", error_description="malformed"`, "public"},
		{"bearer-two-spaces", nginxAuthz("GET", "/orders/1", "", map[string]string{"Authorization": "Bearer  " + read}), 401, `Bearer error="invalid_token", error_description="malformed"`, "orders-read"},
		{"bearer-alone", nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": "Bearer"}), 401, `Bearer error="invalid_token", error_description="malformed"`, "public"},
		{"bearer-one-space-alone", nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": "Bearer "}), 401, `Bearer error="invalid_token", error_description="malformed"`, "public"},
		{"dpop-tab", nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": "DPoP\t" + read}), 401, `Bearer error="invalid_token", error_description="malformed"`, "public"},
		{"bearer-lower-case", nginxAuthz("GET", "/orders/1", "", map[string]string{"Authorization": "bearer " + read}), 200, "", "orders-read"},
		{"basic-anonymous", nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}), 200, "", "public"},
		// A value that spells Bearer and goes on is held to the Bearer
		// form: go-chi/jwtauth up to v5.3.2 reads the token after any 7th
		// byte (TestAuthorizationReadOtherwise).
		{"bearerx-malformed", nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": "Bearerx y"}), 401, `Bearer error="invalid_token", error_description="malformed"`, "public"},
		{"other-preset-header-ignored", nginxAuthz("GET", "/admin", read, map[string]string{"X-Forwarded-Uri": "/public", "X-Forwarded-Method": "GET"}), 403, `Bearer error="insufficient_scope"`, "admin"},
		{"missing-original-denied", nginxAuthz("GET", "/public", read, map[string]string{"X-Original-Uri": ""}), 403, `Bearer error="insufficient_scope"`, ""},
		{"query-never-matches", nginxAuthz("GET", "/admin?x=/public", read, nil), 403, `Bearer error="insufficient_scope"`, "admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(e.handler, tt.req)
			if w.Code != tt.wantStatus || w.Header().Get("Www-Authenticate") != tt.wantWWW {
				t.Fatalf("status %d, WWW-Authenticate %q; want %d, %q", w.Code, w.Header().Get("Www-Authenticate"), tt.wantStatus, tt.wantWWW)
			}
			if w.Code == 403 && w.Body.String() != `{"valid":true,"allowed":false,"error":"forbidden"}`+"\n" {
				t.Errorf("403 body = %q", w.Body.String())
			}
			if tt.name == "anonymous-public" {
				if v, ok := w.Header()["X-Auth-Subject"]; !ok || len(v) != 1 || v[0] != "" {
					t.Errorf("anonymous X-Auth-Subject = %q, %v; want present and empty", v, ok)
				}
			}
			d := e.srv.Decide(tt.req.Context(), forwardAuthCall(e.srv, tt.req))
			if d.Policy != tt.wantPolicy {
				t.Errorf("Decision.Policy = %q, want %q", d.Policy, tt.wantPolicy)
			}
		})
	}
}

// forwardAuthCall is the call /v1/authz makes for r.
func forwardAuthCall(s *Server, r *http.Request) *Call {
	o, err := s.proxy.From(r, authzPath)
	return &Call{Endpoint: EndpointAuthz, Headers: r.Header, Original: o, OriginalErr: err, Routed: true}
}

// TestPolicyOnCacheHit: the same token, first under a policy that allows it
// and then under one that refuses it: 200, then 403 from a token-cache hit.
func TestPolicyOnCacheHit(t *testing.T) {
	e := newPolicyEnv(t, nil)
	tok := mint(claims(nil))
	r := func(name string) *http.Request { return nginxAuthz("GET", "/x", tok, nil).WithContext(t.Context()) }
	req := r("allow")
	req.URL.Path = "/v1/policy/allow"
	if w := do(e.handler, req); w.Code != 200 {
		t.Fatalf("allow = %d, want 200", w.Code)
	}
	before := e.v.CacheStats()
	req = r("deny")
	req.URL.Path = "/v1/policy/deny"
	if w := do(e.handler, req); w.Code != 403 || w.Header().Get("Www-Authenticate") != `Bearer error="insufficient_scope"` {
		t.Fatalf("deny = %d %q, want 403 insufficient_scope", w.Code, w.Header().Get("Www-Authenticate"))
	}
	if after := e.v.CacheStats(); after.Hits != before.Hits+1 || after.Misses != before.Misses {
		t.Fatalf("CacheStats %+v -> %+v: the second request was not a token-cache hit", before, after)
	}
	req = r("nope")
	req.URL.Path = "/v1/policy/nope"
	if w := do(e.handler, req); w.Code != 404 {
		t.Fatalf("/v1/policy/nope = %d, want 404", w.Code)
	}
}

func TestVerifyWithPolicy(t *testing.T) {
	e := newPolicyEnv(t, nil)
	tok := mint(claims(map[string]any{"scope": "orders:read"}))
	for _, tt := range []struct {
		name, body string
		status     int
		want       map[string]any
	}{
		{"allowed", `{"token":"` + tok + `","policy":"orders-read"}`, 200, map[string]any{"valid": true, "allowed": true, "policy": "orders-read"}},
		{"refused", `{"token":"` + tok + `","policy":"orders-write"}`, 200, map[string]any{"valid": true, "allowed": false, "error": "forbidden", "policy": "orders-write"}},
		{"expression-sees-upper-case-method", `{"token":"` + tok + `","policy":"no-delete","request":{"method":"delete","path":"/orders/1"}}`, 200, map[string]any{"valid": true, "allowed": false, "error": "forbidden", "policy": "no-delete"}},
		// The request is read as forward-auth reads it: a dot segment is
		// ambiguous, and a _method override in the path's query is decided too.
		{"dot-segment-refused", `{"token":"` + tok + `","policy":"orders-read","request":{"method":"GET","path":"/public/../orders/1"}}`, 200, map[string]any{"valid": true, "allowed": false, "error": "forbidden", "policy": "orders-read"}},
		{"query-override-decided", `{"token":"` + tok + `","policy":"no-delete","request":{"method":"POST","path":"/orders/1?_method=DELETE"}}`, 200, map[string]any{"valid": true, "allowed": false, "error": "forbidden", "policy": "no-delete"}},
		{"no-override-allowed", `{"token":"` + tok + `","policy":"no-delete","request":{"method":"POST","path":"/orders/1"}}`, 200, map[string]any{"valid": true, "allowed": true, "policy": "no-delete"}},
		{"invalid-token", `{"token":"x.y.z","policy":"orders-read"}`, 200, map[string]any{"valid": false, "allowed": false, "error": "malformed"}},
		{"unknown-policy", `{"token":"` + tok + `","policy":"nope"}`, 400, map[string]any{"error": "bad_request"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := do(e.handler, httptest.NewRequest(http.MethodPost, "/v1/verify", strings.NewReader(tt.body)))
			var got map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != tt.status {
				t.Fatalf("status %d body %q (%v); want %d", w.Code, w.Body.String(), err, tt.status)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (body %s)", k, got[k], v, w.Body.String())
				}
			}
			if _, ok := got["requirement"]; ok {
				t.Errorf("the body shows the failed requirement to the caller: %s", w.Body.String())
			}
		})
	}
}

func TestResourceMetadata(t *testing.T) {
	e := newPolicyEnv(t, &ResourceMetadata{Resource: "https://api.example.com/orders", AuthorizationServers: []string{servertest.IssuerA}})
	const url = "https://api.example.com/.well-known/oauth-protected-resource/orders"
	w := do(e.handler, nginxAuthz("GET", "/orders/1", "", nil))
	if want := `Bearer realm="jwksverify", resource_metadata="` + url + `"`; w.Code != 401 || w.Header().Get("Www-Authenticate") != want {
		t.Fatalf("401 challenge %q, want %q", w.Header().Get("Www-Authenticate"), want)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/orders"} {
		w := get(e.handler, p)
		var doc struct {
			Resource string   `json:"resource"`
			AS       []string `json:"authorization_servers"`
			Scopes   []string `json:"scopes_supported"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || w.Code != 200 || doc.Resource != "https://api.example.com/orders" ||
			len(doc.AS) != 1 || strings.Join(doc.Scopes, " ") != "orders:read orders:write" {
			t.Fatalf("GET %s = %d %s", p, w.Code, w.Body.String())
		}
	}
}

// TestAuthzPathsUpstreamsReadOtherwise: under a strict route and a lenient
// default, a path that an upstream routes to the strict route's subtree
// while its plain reading does not (path parameters, which Tomcat, Jetty
// and Spring strip; a '#', which Go's net/http keeps in the path) is
// denied, never decided by the default.
func TestAuthzPathsUpstreamsReadOtherwise(t *testing.T) {
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{
			{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
			{Name: "allow"},
		},
		Routes:        []policy.Route{{Path: "/admin/**", Policy: "admin"}},
		DefaultPolicy: "allow",
	})
	if err != nil {
		t.Fatal(err)
	}
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 10, IndexClaims: set.ClaimNames()})
	srv, err := New(Options{Verifier: ve.V, Proxy: request.Nginx, Policies: set,
		Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil)), Now: ve.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	tok := mint(claims(nil))
	for _, tt := range []struct {
		name, uri  string
		wantStatus int
	}{
		{"default", "/orders/1", 200},
		{"admin", "/admin/secret", 403},
		{"path-parameter", "/admin;jsessionid=1/secret", 403},
		{"empty-path-parameter", "/admin;/secret", 403},
		{"fragment-then-climb", "/public#/../admin/secret", 403},
		{"fragment-in-query", "/orders/1?a=1#/../../admin", 403},
		{"encoded-semicolon", "/admin%3Bx/secret", 200}, // no server strips an escaped ';'
	} {
		t.Run(tt.name, func(t *testing.T) {
			if w := do(srv.Handler(), nginxAuthz("GET", tt.uri, tok, nil)); w.Code != tt.wantStatus {
				t.Fatalf("%s: status %d, want %d", tt.uri, w.Code, tt.wantStatus)
			}
		})
	}
}

// newRoutedEnv is newPolicyEnvWith's server with the policies and routes
// of o instead of its own.
func newRoutedEnv(t *testing.T, o policy.Options) *env {
	t.Helper()
	set, err := policy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return newPolicyEnvWith(t, nil, func(opts *Options) { opts.Policies = set })
}

// TestRoutesNeedProxy: routes choose a policy by the original request,
// which only a proxy preset reports: New refuses routes without one
// (every routed request would otherwise be refused as unrouted, silently).
func TestRoutesNeedProxy(t *testing.T) {
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{{Name: "allow"}},
		Routes:   []policy.Route{{Path: "/**", Policy: "allow"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ve := servertest.NewEnv(t, servertest.Config{})
	for _, tt := range []struct {
		name    string
		proxy   request.Proxy
		wantErr error
	}{
		{"no-proxy", request.None, ErrInvalidOptions},
		{"nginx", request.Nginx, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Options{Verifier: ve.V, Policies: set, Proxy: tt.proxy})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("New() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
