package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// policyConfig is the policies of docs/POLICIES.md's example (the proxy
// preset is set by startBackends).
func policyConfig() string {
	return `policies:
  - {name: orders-read, scopes: {any: [orders:read, orders:write]}}
  - {name: orders-write, scopes: {all: [orders:write]}}
  - {name: admin, claims: [{claim: groups, any_of: [admins]}]}
  - {name: public, allow_anonymous: true}
routes:
  - {methods: [POST, PUT, PATCH, DELETE], path: /orders/**, policy: orders-write}
  - {path: /orders/**, policy: orders-read}
  - {path: /admin/**, policy: admin}
  - {path: /public/**, policy: public}
default_policy: admin
`
}

func TestNginxPolicies(t *testing.T) {
	testPolicies(t, startNginxWith(t, false, "", policyConfig()), "X-Forwarded")
}

func TestCaddyPolicies(t *testing.T) {
	testPolicies(t, startCaddyWith(t, false, "", policyConfig()), "X-Original")
}

// testPolicies runs the acceptance cases of authorization policies through
// a real proxy with the shipped file: read-only token, scoped routes, the
// anonymous public route, the other preset's headers sent by the client,
// and dot segments in every encoding never reaching the admin-only allow;
// every refusal says Cache-Control: no-store, as jwksverify's own.
func testPolicies(t *testing.T, px *proxyEnv, otherPreset string) {
	is := px.issuer
	read := is.Token(nil) // scope orders:read
	none := is.Token(map[string]any{"scope": nil})
	admin := is.Token(map[string]any{"scope": nil, "groups": []string{"admins"}})
	tests := []struct {
		name, method, path, token string
		header                    map[string]string
		wantStatus                int
		wantWWW                   string // "" = not checked
	}{
		{name: "read-get-order", method: "GET", path: "/orders/1", token: read, wantStatus: 200},
		{name: "read-post-orders", method: "POST", path: "/orders", token: read, wantStatus: 403, wantWWW: `Bearer error="insufficient_scope", scope="orders:write"`},
		{name: "no-scopes-order", method: "GET", path: "/orders/1", token: none, wantStatus: 403, wantWWW: `Bearer error="insufficient_scope", scope="orders:read orders:write"`},
		{name: "no-scopes-public", method: "GET", path: "/public", token: none, wantStatus: 200},
		{name: "anonymous-public", method: "GET", path: "/public/x", wantStatus: 200},
		{name: "anonymous-order", method: "GET", path: "/orders/1", wantStatus: 401},
		{name: "admin-admin", method: "GET", path: "/admin/x", token: admin, wantStatus: 200},
		{name: "other-preset-headers", method: "GET", path: "/admin", token: read, header: map[string]string{
			otherPreset + "-Uri": "/public", otherPreset + "-Method": "GET", otherPreset + "-Host": "elsewhere"}, wantStatus: 403},
		{name: "own-preset-headers-overwritten", method: "GET", path: "/admin", token: read, header: map[string]string{
			strings.Replace(otherPreset, "Forwarded", "Original", 1) + "-Uri": "/public"}, wantStatus: 403},
		{name: "dotdot", method: "GET", path: "/public/../admin", token: read},
		{name: "dotdot-encoded", method: "GET", path: "/public/%2e%2e/admin", token: read},
		{name: "dotdot-encoded-upper", method: "GET", path: "/public/%2E%2E/admin", token: read},
		{name: "dotdot-mixed", method: "GET", path: "/public/.%2e/admin", token: read},
		{name: "encoded-slash", method: "GET", path: "/public/..%2Fadmin", token: read},
		{name: "backslash", method: "GET", path: "/public/..%5Cadmin", token: read},
		{name: "dotdot-anonymous", method: "GET", path: "/public/../admin"},
		{name: "dotdot-encoded-anonymous", method: "GET", path: "/public/%2e%2e/admin"},
	}
	c := httpClient()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, px.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			hits := px.upstream.Hits()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			got := px.upstream.Hits() - hits
			if tc.wantStatus == 0 {
				// Never the admin-only allow: the request must not reach the upstream.
				if resp.StatusCode == 200 || got != 0 {
					t.Fatalf("%s %s = %d (upstream hits %d): a read-only or anonymous request reached the admin route", tc.method, tc.path, resp.StatusCode, got)
				}
				return
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("%s %s = %d, want %d (body %q)", tc.method, tc.path, resp.StatusCode, tc.wantStatus, data)
			}
			if tc.wantWWW != "" && resp.Header.Get("WWW-Authenticate") != tc.wantWWW {
				t.Errorf("WWW-Authenticate = %q, want %q", resp.Header.Get("WWW-Authenticate"), tc.wantWWW)
			}
			if tc.wantStatus != 200 && got != 0 {
				t.Errorf("upstream hits %d for a denied request", got)
			}
			// A refusal is never stored (jwksverify's own answers say
			// no-store): nginx's file writes its 401, 403 and 503 itself.
			if tc.wantStatus != 200 && resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("%d Cache-Control = %q, want no-store", resp.StatusCode, resp.Header.Get("Cache-Control"))
			}
		})
	}
}
