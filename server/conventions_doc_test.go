package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestAPIDocCacheControl checks docs/API.md's convention that every JSON
// response carries Cache-Control: no-store, on every route the server
// registers (resource metadata included): a route that answers another
// Cache-Control must be named in the Conventions with the value it sends.
func TestAPIDocCacheControl(t *testing.T) {
	const resourceMetadataPath = "/.well-known/oauth-protected-resource"
	doc := readAPIDoc(t)
	_, conv, _ := strings.Cut(doc, "\n## Conventions\n")
	conv, _, _ = strings.Cut(conv, "\n## ")
	conv = strings.Join(strings.Fields(conv), " ")
	e := newPolicyEnv(t, &ResourceMetadata{Resource: "https://api.example.com/orders", AuthorizationServers: []string{servertest.IssuerA}})
	routes := e.srv.routeTable()
	for _, rt := range routes {
		t.Run(strings.Trim(strings.ReplaceAll(rt.path, "/", "-"), "-"), func(t *testing.T) {
			w := do(e.handler, httptest.NewRequest(rt.methods[0], rt.path, strings.NewReader("{}")))
			if !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
				return // /metrics: Prometheus text
			}
			cc := w.Header().Get("Cache-Control")
			if cc == "no-store" {
				return
			}
			name := rt.path
			if strings.HasPrefix(name, resourceMetadataPath) {
				name = resourceMetadataPath // also at resource_metadata.url's path
			}
			if !strings.Contains(conv, "`"+name+"`: `Cache-Control: "+cc+"`") {
				t.Errorf("%s %s answers Cache-Control %q; docs/API.md's Conventions say no-store and name no exception for it", rt.methods[0], rt.path, cc)
			}
		})
	}
	if w := do(e.handler, httptest.NewRequest(http.MethodGet, "/nowhere", nil)); w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("404 Cache-Control = %q, want no-store", w.Header().Get("Cache-Control"))
	}
}
