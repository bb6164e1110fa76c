package server

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// TestRevokedStaysRevokedAfterRetentionRaisedAcrossRestart:
// an entry's expires_at is fixed when it is stored, from the retention of
// that moment. A restart with a larger retention (which raises every
// issuer's default max_lifetime with it, and the stage's bound) reads the
// old entries back with their old expiry: a token issued before a
// sub-revocation (a back-channel logout, say), living 12 h, is refused
// while the entry lives and passes once it is gone, 1h20m later, long
// before its exp — though the store now claims a 24 h retention.
func TestRevokedStaysRevokedAfterRetentionRaisedAcrossRestart(t *testing.T) {
	clock := servertest.NewClock()
	dir := t.TempDir()
	ctx := context.Background()

	// Before the restart: retention 1h.
	m1, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: dir, Retention: time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Minute) // the token below was issued a minute before the logout
	if _, err := m1.Add(ctx, revoke.Entry{Issuer: servertest.IssuerA, Kind: revoke.KindSub, Value: "alice", Source: revoke.SourceBackchannelLogout}); err != nil {
		t.Fatal(err)
	}
	m1.Close()

	// The restart: retention 24h (config: max_lifetime defaults to it).
	m2, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: dir, Retention: 24 * time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	ka := &cache.Keys{}
	ka.Store(servertest.KeySet(t, servertest.Epoch))
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{Issuer: servertest.IssuerA, Keys: ka, Audiences: []string{servertest.Audience}, MaxLifetime: 24 * time.Hour}},
		Now:     clock.Now, IndexClaims: RevocationClaims(),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Verifier: v, Revocations: m2, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	// iat = Epoch (a minute before the entry's issued_before), exp 12h later.
	tok := mint(claims(map[string]any{"exp": servertest.Epoch.Add(12 * time.Hour).Unix()}))
	if d := srv.Decide(ctx, &Call{Endpoint: EndpointAuthz, Token: tok}); d.Allowed() || d.Class != "revoked" {
		t.Fatalf("just after the restart: Decide = %d %q, want 401 revoked", d.Status, d.Class)
	}
	clock.Add(2 * time.Hour) // the entry (1h + 20m) is gone; the token has ~10h left
	if d := srv.Decide(ctx, &Call{Endpoint: EndpointAuthz, Token: tok}); d.Allowed() {
		t.Errorf("2h after the logout: Decide = %d (allowed), want revoked: the sub entry named this token and the store keeps entries %s", d.Status, m2.Retention())
	}
}
