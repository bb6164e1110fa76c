package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// TestRevokedNoIATTokenOutlivesEntry: a token without iat is held
// to exp − now, which bounds nothing about the time of its revocation. A
// jti-revoked token whose exp is 3h after the revocation (retention and
// max_lifetime 1h) is lifetime_exceeded, then revoked, then — once the
// entry is gone (1h20m) and exp − now fell under 1h — allowed.
func TestRevokedNoIATTokenOutlivesEntry(t *testing.T) {
	const retention = time.Hour
	clock := servertest.NewClock()
	ka := &cache.Keys{}
	ka.Store(cache.NewSet(servertest.KeySet(t, servertest.Epoch).Keys(), nil, servertest.Epoch, servertest.Epoch.Add(48*time.Hour)))
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{Issuer: servertest.IssuerA, Keys: ka, Audiences: []string{servertest.Audience},
			MaxLifetime: retention}},
		Now: clock.Now, IndexClaims: RevocationClaims(),
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: retention, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv, err := New(Options{Revocations: m, Verifier: v, Now: clock.Now,
		IntrospectionClients: []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}}})
	if err != nil {
		t.Fatal(err)
	}
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
