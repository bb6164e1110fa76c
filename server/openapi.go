package server

import (
	"net/http"

	"github.com/jwksverify/jwksverify/api"
)

// serveOpenAPI returns the handler of GET /openapi.yaml: the OpenAPI
// document of this API (package api), public and the same for every
// request of a build, so caches may keep it as long as the resource
// metadata.
func serveOpenAPI(doc []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{api.MediaType}
		h["X-Content-Type-Options"] = []string{"nosniff"}
		h["Cache-Control"] = []string{"max-age=300"}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(doc)
	}
}
