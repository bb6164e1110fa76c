package service

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// TestReloadKeepsAdminEndpointsWhereTheyAre: admin_listen needs a restart
// (the running listener is kept), so a reload that sets or removes it moves
// no endpoint between the listeners. A reload that removed it served
// /metrics and /v1/issuers on listen, to anyone who reaches the API; one
// that set it answered 404 to the probes of /healthz and /readyz on
// listen, with no admin listener to take them.
func TestReloadKeepsAdminEndpointsWhereTheyAre(t *testing.T) {
	jwksSrv := jwksServer(t)
	base := "listen: 127.0.0.1:0\nissuers:\n  - issuer: https://idp.example/\n    jwks_url: " + jwksSrv.URL + "\n"
	admin := "admin_listen: 127.0.0.1:0\n"
	tests := []struct {
		name       string
		start, end string
		api, adm   int // the status of each path on Handler and AdminHandler
	}{
		{"admin-listen-removed", admin + base, base, http.StatusNotFound, http.StatusOK},
		{"admin-listen-set", base, admin + base, http.StatusOK, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			l := startLive(t, writePlan(t, path, tt.start))
			if err := l.Ready(t.Context()); err != nil {
				t.Fatal(err)
			}
			mustReload(t, l, context.Background(), writePlan(t, path, tt.end))
			for _, p := range []string{"/metrics", "/v1/issuers", "/healthz", "/readyz"} {
				for _, h := range []struct {
					name string
					h    http.Handler
					want int
				}{{"Handler", l.Handler(), tt.api}, {"AdminHandler", l.AdminHandler(), tt.adm}} {
					w := httptest.NewRecorder()
					h.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, p, nil))
					if w.Code != h.want {
						t.Errorf("%s GET %s after the reload: %d, want %d", h.name, p, w.Code, h.want)
					}
				}
			}
		})
	}
}
