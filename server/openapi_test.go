package server

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/jwksverify/jwksverify/api"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// The tests of this file hold api/openapi.yaml to the routes the server
// registers, both ways; integration/openapi_test.go validates the real
// binary's answers against the document.

// openAPIOperations returns the document's paths, each with its operations'
// methods (upper case, sorted).
func openAPIOperations(t *testing.T) map[string][]string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	ops := map[string][]string{}
	for path, item := range doc.Paths {
		ops[path] = []string{}
		for key := range item {
			m := strings.ToUpper(key)
			if slices.Contains(anyMethod, m) {
				ops[path] = append(ops[path], m)
			}
		}
		slices.Sort(ops[path])
	}
	return ops
}

// anyMethod is every method an OpenAPI path item can describe, sorted:
// forward-auth answers each of them.
var anyMethod = []string{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"}

// forwardAuthTemplates are the document's forward-auth paths, with a
// request path each stands for: forward-auth is dispatched before the mux,
// for any method and any path below its prefix.
var forwardAuthTemplates = map[string]string{
	"/v1/authz":                authzPath,
	"/v1/authz/{path}":         authzPath + "/orders/42",
	"/v1/policy/{name}":        policyPrefix + "orders-read",
	"/v1/policy/{name}/{path}": policyPrefix + "orders-read/orders/42",
}

// TestOpenAPIRoutes checks that every route the server registers (with
// metrics, resource metadata and revocation signals configured) is a path of api/openapi.yaml
// with exactly its methods, that forward-auth is described for every
// method, and that every path of the document is served.
func TestOpenAPIRoutes(t *testing.T) {
	ops := openAPIOperations(t)
	withMetrics := newEnv(t, envConfig{revocations: true})
	withPolicies := newPolicyEnv(t, &ResourceMetadata{Resource: "https://api.example.com/orders", AuthorizationServers: []string{servertest.IssuerA}})
	served := map[string][]string{}
	withMint, _ := newMintEnv(t, nil, nil)
	for _, e := range []*env{withMetrics, withPolicies, withMint} {
		for _, rt := range e.srv.routeTable() {
			path := rt.path
			if strings.HasPrefix(path, wellKnown+"/") {
				// resource_metadata.url's path: described with the
				// well-known path it extends.
				path = wellKnown
			}
			served[path] = slices.Sorted(slices.Values(rt.methods))
		}
	}
	for _, rt := range newSignalEnv(t).srv.signalRoutes() {
		served[rt.path] = slices.Sorted(slices.Values(rt.methods))
	}
	for path, methods := range served {
		if got, ok := ops[path]; !ok {
			t.Errorf("the server registers %s %v; api/openapi.yaml has no such path", path, methods)
		} else if !slices.Equal(got, methods) {
			t.Errorf("api/openapi.yaml describes %s for %v; the server answers %v", path, got, methods)
		}
	}
	for tmpl, target := range forwardAuthTemplates {
		if got := ops[tmpl]; !slices.Equal(got, anyMethod) {
			t.Errorf("api/openapi.yaml describes forward-auth %s for %v, want every method %v", tmpl, got, anyMethod)
		}
		for _, m := range anyMethod {
			// Forward-auth answers any method; without a token it is 401
			// (a 404 would be the mux's "no such endpoint", a 405 a route's).
			r := httptest.NewRequest(m, target, nil)
			r.Header.Set("X-Original-Method", http.MethodGet)
			r.Header.Set("X-Original-Uri", "/orders/1")
			r.Header.Set("X-Original-Host", "api.example.com")
			if w := do(withPolicies.handler, r); w.Code != http.StatusUnauthorized {
				t.Errorf("%s %s without a token = %d, want 401 from forward-auth", m, target, w.Code)
			}
		}
	}
	for path := range maps.Keys(ops) {
		if _, ok := served[path]; !ok && forwardAuthTemplates[path] == "" {
			t.Errorf("api/openapi.yaml describes %s, which the server does not register", path)
		}
	}
}

// TestOpenAPIServed checks GET /openapi.yaml: the embedded document, as
// YAML, cacheable, on the main listener and not the admin one.
func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t, envConfig{})
	w := get(e.handler, "/openapi.yaml")
	if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), api.OpenAPI()) {
		t.Fatalf("GET /openapi.yaml = %d, %d bytes; want 200 and the %d bytes of api.OpenAPI()", w.Code, w.Body.Len(), len(api.OpenAPI()))
	}
	want := http.Header{
		"Content-Type":           {"application/yaml"},
		"Cache-Control":          {"max-age=300"},
		"X-Content-Type-Options": {"nosniff"},
	}
	if !maps.EqualFunc(w.Header(), want, slices.Equal) {
		t.Errorf("GET /openapi.yaml headers = %v, want %v", w.Header(), want)
	}
	if w := get(e.srv.AdminHandler(), "/openapi.yaml"); w.Code != http.StatusNotFound {
		t.Errorf("admin GET /openapi.yaml = %d, want 404 (the document describes the main listener)", w.Code)
	}
}
