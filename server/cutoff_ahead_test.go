package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestAdminCutoffAheadWithinLeeway: an identity provider whose clock runs
// 20s ahead (within the issuer's 30s leeway, which the verifier accepts)
// stamps a token it issued a moment before the operator's revocation with
// an iat 15s after jwksverify's now. A sub entry cut off at now let that
// token through, and an issued_before in the future was refused: the
// operator could not cover it. Up to the leeway ahead is taken now; more
// is still refused (a lock-out of tokens not yet issued).
func TestAdminCutoffAheadWithinLeeway(t *testing.T) {
	const leeway = 30 * time.Second
	srv, clock := revocationServer(t, 24*time.Hour, leeway)
	now := clock.Now()
	ahead := now.Add(15 * time.Second) // the provider's clock when it issued the token
	tok := mint(claims(map[string]any{"iat": ahead.Unix(), "nbf": ahead.Unix(), "exp": ahead.Add(time.Hour).Unix()}))
	decide := func() Decision {
		return srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok})
	}
	if d := decide(); d.Status != http.StatusOK {
		t.Fatalf("token from a provider 15s ahead: %d %q, want allowed (within the leeway)", d.Status, d.Class)
	}
	for _, tc := range []struct {
		name   string
		before time.Time
		status int
	}{
		{"beyond-the-leeway", now.Add(leeway + time.Second), http.StatusBadRequest},
		{"at-the-provider's-clock", now.Add(20 * time.Second), http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"issuer":"` + servertest.IssuerA + `","sub":"alice","issued_before":"` + tc.before.Format(time.RFC3339) + `"}`
			w := do(srv.AdminHandler(), adminRequest(http.MethodPost, revocationsPath, body))
			if w.Code != tc.status {
				t.Fatalf("POST issued_before now+%s = %d %s, want %d", tc.before.Sub(now), w.Code, w.Body, tc.status)
			}
			if tc.status == http.StatusBadRequest && !strings.Contains(w.Body.String(), "leeway") {
				t.Errorf("refusal %s does not say the bound", w.Body)
			}
		})
	}
	if d := decide(); d.Class != "revoked" {
		t.Errorf("after a sub cut-off at the provider's clock: %d %q, want revoked", d.Status, d.Class)
	}
}
