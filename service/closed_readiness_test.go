package service

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestClosedServiceIsNotReady: after Close nothing fetches keys, follows
// the revocation store or watches a file any more, but /readyz went on
// answering 200 {"ready":true} (and gRPC health SERVING) to a load balancer
// still pointed at a program that closed its service and kept its
// listeners, or that replaced it by another one and left the old handlers
// mounted. A closed service answers readiness as a draining one: 503.
func TestClosedServiceIsNotReady(t *testing.T) {
	s := startOrdersPlan(t, "")
	for name, h := range map[string]http.Handler{"Handler": s.Handler(), "AdminHandler": s.AdminHandler()} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		if w.Code != http.StatusOK {
			t.Fatalf("premise: %s /readyz before Close = %d, want 200", name, w.Code)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]http.Handler{"Handler": s.Handler(), "AdminHandler": s.AdminHandler()} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		if w.Code != http.StatusServiceUnavailable {
			t.Errorf("%s /readyz after Close = %d %s, want 503", name, w.Code, w.Body)
		}
	}
}
