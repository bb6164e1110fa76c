package server

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestRevocationsStoreFailedSays: a store that could not answer is 503
// for every admin call; a change (POST, DELETE) is "not acknowledged",
// never "nothing was changed" (with acknowledge_replicas, a change the
// replicas did not confirm in time is in force on the master all the
// same), and a list says the store is unavailable, not that a change was
// lost.
func TestRevocationsStoreFailedSays(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{NoDown: true})
	st := &staleStore{idx: revoke.NewIndex(30 * time.Second)}
	srv, err := New(Options{Verifier: ve.V, Revocations: st, Logger: slog.New(slog.DiscardHandler), Now: ve.Clock.Now,
		IntrospectionClients: []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, target, body, want string
	}{
		{"add", http.MethodPost, revocationsPath, `{"issuer":"` + servertest.IssuerA + `","jti":"x"}`, "did not acknowledge the change"},
		{"delete", http.MethodDelete, revocationsPath + "/0123", "", "did not acknowledge the change"},
		{"list", http.MethodGet, revocationsPath, "", "revocation store is unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(srv.AdminHandler(), adminRequest(tc.method, tc.target, tc.body))
			if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), tc.want) || strings.Contains(w.Body.String(), "nothing was") {
				t.Errorf("%s %s = %d %s, want 503 saying %q", tc.method, tc.target, w.Code, w.Body, tc.want)
			}
		})
	}
}
