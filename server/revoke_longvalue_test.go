package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/signals"
)

// TestRevokeLongClaimValue: a token verifies with a sid, sub or jti of any
// length up to max_token_bytes, so a revocation naming it — a valid
// back-channel logout token, an admin entry — must be stored and enforced
// whatever its length. The store refused values over 1024 bytes: the
// logout was answered 503 for ever (the IdP retries, nothing is revoked)
// and the admin API 400, while the session's token kept passing.
func TestRevokeLongClaimValue(t *testing.T) {
	e := newEnv(t, envConfig{revocations: true, noDown: true})
	long := strings.Repeat("s", 1500)
	mem, err := replay.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := signals.New(signals.Options{
		Verifier: e.v, Replay: mem, Store: e.revocations, Logger: slog.New(slog.DiscardHandler),
		Issuers: []signals.Issuer{{Issuer: issuerA, Logout: &signals.Logout{Audiences: []string{logoutClient}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tok := mint(claims(map[string]any{"sid": long}))
	if d := e.srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok}); d.Status != http.StatusOK {
		t.Fatalf("before the logout: %d %q, want 200", d.Status, d.Class)
	}
	if _, err := r.Logout(context.Background(), logoutToken(map[string]any{"sid": long}), e.clock.Now()); err != nil {
		t.Errorf("Logout() of a valid logout token with a %d-byte sid = %v, want nil (stored)", len(long), err)
	}
	if d := e.srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok}); d.Class != "revoked" {
		t.Errorf("after the logout: %d %q, want 401 revoked", d.Status, d.Class)
	}

	// The admin API: a jti the verifier accepts can be revoked.
	jtiTok := mint(claims(map[string]any{"jti": strings.Repeat("j", 1500)}))
	w := do(e.srv.AdminHandler(), adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","jti":"`+strings.Repeat("j", 1500)+`"}`))
	if w.Code != http.StatusCreated {
		t.Errorf("POST a %d-byte jti = %d %s, want 201", 1500, w.Code, strings.TrimSpace(w.Body.String()))
	}
	if d := e.srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: jtiTok}); d.Class != "revoked" {
		t.Errorf("jti-revoked token: %d %q, want 401 revoked", d.Status, d.Class)
	}
}
