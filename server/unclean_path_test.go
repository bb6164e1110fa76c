package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestUncleanPathNotFound: a path http.ServeMux would clean gets the JSON
// 404 of any unknown path (api/openapi.yaml, components.responses.NotFound),
// not the mux's 307 text/html redirect, on both handlers.
func TestUncleanPathNotFound(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, h := range []http.Handler{e.handler, e.srv.AdminHandler()} {
		for _, target := range []string{"//v1/verify", "/v1/./issuers", "/x/../healthz", "//healthz", "/v1//issuers"} {
			for _, m := range []string{http.MethodGet, http.MethodPost} {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(m, target, nil))
				if w.Code != http.StatusNotFound || w.Header().Get("Content-Type") != "application/json; charset=utf-8" || w.Header().Get("Cache-Control") != "no-store" {
					t.Errorf("%s %s = %d %v %q, want the JSON 404", m, target, w.Code, w.Header(), w.Body.String())
				}
			}
		}
	}
	// Clean paths are unchanged.
	w := httptest.NewRecorder()
	e.handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if w.Code != http.StatusOK {
		t.Errorf("GET /healthz = %d, want 200", w.Code)
	}
}
