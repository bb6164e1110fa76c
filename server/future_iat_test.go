package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestFutureIatRefused: an access token whose iat is in the future was
// accepted (no iat check for access tokens, and max_lifetime measured from
// iat), so a token with iat = 2099 and exp = iat+1h was valid for 73 years
// and no issued_before entry (refused in the future) could ever name it:
// the whole-issuer revocation an operator uses after a key compromise let
// it through. It is now not_yet_valid.
func TestFutureIatRefused(t *testing.T) {
	srv, clock := revocationServer(t, 24*time.Hour, 0)
	future := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	tok := mint(claims(map[string]any{"iat": future.Unix(), "exp": future.Add(time.Hour).Unix(), "nbf": nil}))
	normal := mint(claims(nil))
	clock.Add(time.Second)
	// The operator cuts off the whole issuer (issued_before = now) and the subject.
	revokeVia(t, srv, `{"issuer":"`+servertest.IssuerA+`"}`)
	revokeVia(t, srv, `{"issuer":"`+servertest.IssuerA+`","sub":"alice"}`)
	if d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: normal}); d.Class != "revoked" {
		t.Fatalf("normal token: %d %q, want revoked", d.Status, d.Class)
	}
	d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok})
	if d.Status == http.StatusOK {
		t.Errorf("token with iat %s, exp %s: Decide = %d %q after whole-issuer and sub revocations; want refused", future, future.Add(time.Hour), d.Status, d.Class)
	}
}
