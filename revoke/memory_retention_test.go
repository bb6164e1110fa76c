package revoke

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestMemoryReopenedWithLongerRetentionKeepsEntries: a memory store
// restarted with a raised revocation.retention (1h → 24h) accepts tokens
// living up to the new retention (the stage bounds them by Retention()),
// so an entry written under the old one must be kept for the new one too,
// as the Redis store's replicas do (TestRedisEntryOutlivesReplicaRetention):
// else a token it names passes again once the old expiry (1h20m) is past,
// long before its own exp.
func TestMemoryReopenedWithLongerRetentionKeepsEntries(t *testing.T) {
	dir := t.TempDir()
	now := t0
	clock := func() time.Time { return now }
	m, err := OpenMemory(MemoryOptions{Dir: dir, Retention: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(context.Background(), Entry{Issuer: "https://a/", Kind: KindJTI, Value: "j1", Source: SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	now = t0.Add(2 * time.Hour) // past the entry's 1h20m, within 24h
	m, err = OpenMemory(MemoryOptions{Dir: dir, Retention: 24 * time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok := Token{JTI: "j1", IssuedAt: t0.Add(-time.Minute)} // a 12h token, within the new retention
	if err := m.Index().Check("https://a/", &tok, now); !errors.Is(err, ErrRevoked) {
		t.Errorf("2h after the entry, reopened with retention %s: Check = %v, want revoked", m.Retention(), err)
	}
}
