package revoke

import (
	"context"
	"testing"
	"time"
)

// TestFutureIssuedBeforeClamped: an entry whose issued_before was ahead of
// its creation (a SET's event_timestamp, a logout token's iat within
// leeway) became the node's "latest issued_before" and, once it expired,
// hid a later, still-live entry of the same subject. A store now clamps
// issued_before to the entry's creation.
func TestFutureIssuedBeforeClamped(t *testing.T) {
	now := t0
	m, err := OpenMemory(MemoryOptions{Dir: t.TempDir(), Retention: 24 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	// t0: a SET session-revoked/credential-change with event_timestamp t0+5m.
	if _, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindSub, Value: "alice", IssuedBefore: t0.Add(5 * time.Minute), Source: SourceSSFPush}); err != nil {
		t.Fatal(err)
	}
	// t0+1m: operator revokes alice again (issued_before = now).
	now = t0.Add(time.Minute)
	b, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindSub, Value: "alice", Source: SourceAdmin})
	if err != nil {
		t.Fatal(err)
	}
	// A token of alice issued at t0+30s, lifetime 24h (= retention, allowed).
	tok := Token{Sub: "alice", IssuedAt: t0.Add(30 * time.Second)}
	exp := tok.IssuedAt.Add(24 * time.Hour)
	at := t0.Add(24*time.Hour + 10*time.Second) // A expired, B live, token not expired
	if !at.Before(exp) || !at.Before(b.ExpiresAt) || !tok.IssuedAt.Before(b.IssuedBefore) {
		t.Fatal("setup")
	}
	if err := m.Index().Check("https://a/", &tok, at); err != ErrRevoked {
		t.Errorf("Check = %v; want revoked: entry %s (issued_before %s, expires %s) is live and names the token", err, b.ID, b.IssuedBefore, b.ExpiresAt)
	}
	// A sweep (List, Counts, Put, at most once a minute) rebuilds the node
	// from the live records and repairs it.
	m.Index().List("", at)
	if err := m.Index().Check("https://a/", &tok, at); err != ErrRevoked {
		t.Errorf("after a sweep: Check = %v", err)
	}
}

// TestIssuedBeforeFarFuture: an issued_before after 2262 (a SET's
// event_timestamp is accepted up to 9999) overflowed UnixNano, and the
// acknowledged entry revoked nothing.
func TestIssuedBeforeFarFuture(t *testing.T) {
	now := t0
	m, err := OpenMemory(MemoryOptions{Dir: t.TempDir(), Retention: 24 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, err := m.Add(context.Background(), Entry{Issuer: "https://a/", Kind: KindSub, Value: "alice", IssuedBefore: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), Source: SourceSSFPush})
	if err != nil {
		t.Fatal(err)
	}
	tok := Token{Sub: "alice", IssuedAt: t0.Add(-time.Hour)}
	if err := m.Index().Check("https://a/", &tok, t0); err != ErrRevoked {
		t.Errorf("entry %+v stored, Check = %v; want revoked", e, err)
	}
}

// TestIssuedBeforeFarPast: an admin issued_before before 1678 (accepted:
// only the future is refused) overflowed the other way: "tokens issued
// before 1600" became "every token issued before ~2184".
func TestIssuedBeforeFarPast(t *testing.T) {
	m, err := OpenMemory(MemoryOptions{Dir: t.TempDir(), Retention: 24 * time.Hour, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Add(context.Background(), Entry{Issuer: "https://a/", Kind: KindIssuer, IssuedBefore: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), Source: SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	tok := Token{Sub: "bob", IssuedAt: t0.Add(-time.Minute)}
	if err := m.Index().Check("https://a/", &tok, t0); err != nil {
		t.Errorf("issuer entry 'before 1600': Check(token issued %s) = %v; want nil", tok.IssuedAt, err)
	}
}
