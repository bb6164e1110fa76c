package revoke

import (
	"context"
	"testing"
	"time"
)

// TestTokenIatFarPast: a token whose iat is before 1678 (an introspection
// answer without exp can have one) wrapped in Check's UnixNano and escaped
// an issuer-wide entry; it now saturates.
func TestTokenIatFarPast(t *testing.T) {
	m, err := OpenMemory(MemoryOptions{Dir: t.TempDir(), Retention: 24 * time.Hour, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Add(context.Background(), Entry{Issuer: "https://a/", Kind: KindIssuer, Source: SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	tok := Token{Sub: "bob", IssuedAt: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := m.Index().Check("https://a/", &tok, t0.Add(time.Second)); err != ErrRevoked {
		t.Errorf("token iat 1600 vs whole-issuer cut-off at %s: Check = %v, want revoked", t0, err)
	}
}

// TestSkewedCutoffKept: with the IdP's clock 20 s ahead (within leeway), a
// logout token's iat is now+20s and the access token it revokes was issued
// at IdP time now+10s: a cut-off clamped to this clock's now let it
// through. It is kept up to now + the largest leeway.
func TestSkewedCutoffKept(t *testing.T) {
	m, err := OpenMemory(MemoryOptions{Dir: t.TempDir(), Retention: 24 * time.Hour, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, err := m.Add(context.Background(), Entry{Issuer: "https://a/", Kind: KindSub, Value: "alice", IssuedBefore: t0.Add(20 * time.Second), Source: SourceBackchannelLogout})
	if err != nil {
		t.Fatal(err)
	}
	tok := Token{Sub: "alice", IssuedAt: t0.Add(10 * time.Second)}
	if err := m.Index().Check("https://a/", &tok, t0.Add(time.Minute)); err != ErrRevoked {
		t.Errorf("stored issued_before %s; token issued (IdP clock) 10s before the logout: Check = %v, want revoked", e.IssuedBefore, err)
	}
}
