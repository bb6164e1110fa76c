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

// TestRevocationOutlivesLeeway: config holds max_lifetime to the
// retention "so that no token outlives the entries that name it", but a
// token is accepted until exp + leeway, and its iat may be up to leeway
// ahead of now. An entry kept for retention from its creation expired
// while the token it revoked was still accepted: for up to leeway (a sub
// entry) and 2 × leeway (a jti entry naming a token whose iat is ahead).
func TestRevocationOutlivesLeeway(t *testing.T) {
	const retention = time.Hour
	const leeway = 30 * time.Second
	for _, tc := range []struct {
		name   string
		iat    time.Duration // from the entry's creation
		entry  string
		checks []time.Duration // from the entry's creation
	}{
		{"sub", -time.Second, `,"sub":"alice"`, []time.Duration{retention + time.Second, retention + 20*time.Second}},
		{"jti-iat-ahead", leeway, `,"jti":"id-1"`, []time.Duration{retention + time.Second, retention + leeway + 20*time.Second}},
		{"issuer", -time.Second, ``, []time.Duration{retention + 20*time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, clock := revocationServer(t, retention, leeway)
			created := servertest.Epoch
			iat := created.Add(tc.iat)
			// The longest token max_lifetime allows.
			tok := mint(claims(map[string]any{"iat": iat.Unix(), "nbf": nil, "exp": iat.Add(retention).Unix()}))
			e := revokeVia(t, srv, `{"issuer":"`+servertest.IssuerA+`"`+tc.entry+`}`)
			if d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok}); d.Class != "revoked" {
				t.Fatalf("right after the revocation: %d %q, want revoked", d.Status, d.Class)
			}
			at := time.Duration(0)
			for _, c := range tc.checks {
				clock.Add(c - at)
				at = c
				d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok})
				if d.Status == http.StatusOK {
					t.Errorf("token iat %s exp %s (leeway %s), entry created %s expires %s: at %s Decide = 200, want refused (revoked or expired)",
						iat.Format(time.RFC3339), iat.Add(retention).Format(time.RFC3339), leeway,
						e.CreatedAt.Format(time.RFC3339), e.ExpiresAt.Format(time.RFC3339), clock.Now().Format(time.RFC3339))
				}
			}
		})
	}
}

// revocationServer is a server over a memory revocation store of retention
// on its test clock, and a verifier of issuer A with leeway (0: the
// default) and max_lifetime retention, as config plans them.
func revocationServer(t *testing.T, retention, leeway time.Duration) (*Server, *servertest.Clock) {
	t.Helper()
	clock := servertest.NewClock()
	ka := &cache.Keys{}
	ka.Store(cache.NewSet(servertest.KeySet(t, servertest.Epoch).Keys(), nil, servertest.Epoch, servertest.Epoch.Add(48*time.Hour)))
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{Issuer: servertest.IssuerA, Keys: ka, Audiences: []string{servertest.Audience},
			Leeway: leeway, MaxLifetime: retention}},
		Now: clock.Now, IndexClaims: RevocationClaims(),
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: retention, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	srv, err := New(Options{Revocations: m, Verifier: v, Now: clock.Now,
		IntrospectionClients: []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}}})
	if err != nil {
		t.Fatal(err)
	}
	return srv, clock
}
