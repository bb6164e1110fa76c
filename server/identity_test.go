package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestAuthzAnswerClearsEveryIdentityHeader: an allowed forward-auth answer
// carries every configured identity header, its decision's with their
// values and the others empty, so that a proxy copying the answer's headers
// (Envoy's allowed_upstream_headers copies only those present) overwrites a
// copy a client sent of the issuer's header under a policy with its own
// claims_to_headers, instead of passing it upstream.
func TestAuthzAnswerClearsEveryIdentityHeader(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 10})
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{{Name: "own", Issuers: []string{issuerA}, ClaimsToHeaders: map[string]string{"sub": "X-Policy-Subject"}}},
		Routes:   []policy.Route{{Path: "/own/**", Policy: "own"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Verifier: ve.V, ClaimsToHeaders: servertest.ClaimsToHeaders(), Policies: set, Proxy: request.Envoy,
		Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil)), Now: ve.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	tok := mint(claims(nil))
	for _, tt := range []struct {
		name string
		path string
		want map[string]string
	}{
		{"issuer-headers", "/other", map[string]string{"X-Auth-Subject": "alice", "X-Auth-Scope": "orders:read orders:write", "X-Policy-Subject": ""}},
		{"policy-headers", "/own/x", map[string]string{"X-Policy-Subject": "alice", "X-Auth-Subject": "", "X-Auth-Scope": ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/v1/authz"+tt.path, nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			r.Header.Set("X-Auth-Subject", "admin")
			w := do(srv.Handler(), r)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d, want 200", w.Code)
			}
			for h, want := range tt.want {
				if v, ok := w.Header()[h]; !ok || len(v) != 1 || v[0] != want {
					t.Errorf("%s = %q (present %v), want %q", h, v, ok, want)
				}
			}
		})
	}
}
