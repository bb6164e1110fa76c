package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

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

// TestRevocationClaimNotAString: an entry names a sid, client_id or azp as
// a string, and the stage compares strings; a token carrying the claim as
// a number (client_id: 123) or a list was read as having none, so an
// entry revoking client "123" never applied to it. Under revocation such a
// token is refused as malformed (OIDC's sid and azp and RFC 9068's
// client_id are strings).
func TestRevocationClaimNotAString(t *testing.T) {
	e := newEnv(t, envConfig{revocations: true, noDown: true})
	w := do(e.srv.AdminHandler(), adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","client_id":"123"}`))
	if w.Code != http.StatusCreated {
		t.Fatalf("POST client_id 123 = %d %s", w.Code, strings.TrimSpace(w.Body.String()))
	}
	e.clock.Add(time.Second) // issued after the entry's issued_before: only the type refuses
	tests := []struct {
		name  string
		claim map[string]any
		want  string
	}{
		{"client_id-number", map[string]any{"client_id": 123}, "malformed"},
		{"azp-number", map[string]any{"azp": 123}, "malformed"},
		{"sid-number", map[string]any{"sid": 42}, "malformed"},
		{"sid-list", map[string]any{"sid": []string{"s1"}}, "malformed"},
		{"client_id-null", map[string]any{"client_id": nil}, ""}, // null reads as absent, as everywhere
		{"client_id-other-string", map[string]any{"client_id": "124"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := e.srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: mint(claims(tt.claim))})
			if d.Class != tt.want {
				t.Errorf("Decide = %d %q, want %q", d.Status, d.Class, tt.want)
			}
		})
	}
	// Without revocation the claims are not read: nothing changes.
	plain := newEnv(t, envConfig{})
	if d := plain.srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: mint(claims(map[string]any{"client_id": 123}))}); d.Status != http.StatusOK {
		t.Errorf("without revocation: %d %q, want 200", d.Status, d.Class)
	}
}
