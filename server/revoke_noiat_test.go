package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestRevokedNoIATTokenOutlivesEntry: a token without iat is held
// to exp − now, which bounds nothing about the time of its revocation. A
// jti-revoked token whose exp is 3h after the revocation (retention and
// max_lifetime 1h) is lifetime_exceeded, then revoked, then — once the
// entry is gone (1h20m) and exp − now fell under 1h — allowed.
func TestRevokedNoIATTokenOutlivesEntry(t *testing.T) {
	const retention = time.Hour
	srv, clock := revocationServer(t, retention, 0)
	tok := mint(claims(map[string]any{"iat": nil, "nbf": nil, "exp": servertest.Epoch.Add(3 * time.Hour).Unix()}))
	revokeVia(t, srv, `{"issuer":"`+servertest.IssuerA+`","jti":"id-1"}`)
	prev := time.Duration(0)
	for _, at := range []time.Duration{0, time.Hour + 10*time.Minute, 2*time.Hour + time.Minute} {
		clock.Add(at - prev)
		prev = at
		d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok})
		t.Logf("revocation+%s: %d %q", at, d.Status, d.Class)
		if d.Status == http.StatusOK {
			t.Errorf("jti-revoked token without iat at revocation+%s: 200, want refused", at)
		}
	}
}
