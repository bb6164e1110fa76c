package signals_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

func rtReceiver(t *testing.T, now *time.Time) (*signals.Receiver, *revoke.Memory) {
	t.Helper()
	e := newEnv(t, signals.RevokeSession)
	m, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: 24 * time.Hour, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	mem, _ := replay.NewMemory(0)
	r, err := signals.New(signals.Options{Verifier: e.v, Replay: mem, Store: m,
		Issuers: []signals.Issuer{{Issuer: issuerA, SSF: &signals.SSF{Audiences: []string{ssfAud}, PushBearer: bearerA}}}})
	if err != nil {
		t.Fatal(err)
	}
	return r, m
}

// TestSETTimestampFarFuture: a credential-change SET with event_timestamp
// in year 3000 was stored with a cut-off that overflowed the index's
// nanoseconds and revoked none of the subject's tokens; the cut-off is
// now the time it was received.
func TestSETTimestampFarFuture(t *testing.T) {
	now := epoch
	r, m := rtReceiver(t, &now)
	set := mintSET(setClaims(map[string]any{signals.EventCredentialChange: map[string]any{
		"event_timestamp": time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()}}, map[string]any{"sub_id": opaqueBob}))
	es, _, err := r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPush, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stored: %+v", es)
	tok := revoke.Token{Sub: "bob", IssuedAt: epoch.Add(-time.Hour)}
	if err := m.Index().Check(issuerA, &tok, now); err != revoke.ErrRevoked {
		t.Errorf("SET acknowledged, but bob's token issued an hour ago: Check = %v, want revoked", err)
	}
}

// TestSETFutureTimestamp: a SET whose event_timestamp is 6h ahead revoked
// tokens not yet issued, and hid a later operator entry once it expired;
// its cut-off is now the time it was received.
func TestSETFutureTimestamp(t *testing.T) {
	now := epoch
	r, m := rtReceiver(t, &now)
	set := mintSET(setClaims(map[string]any{signals.EventCredentialChange: map[string]any{
		"event_timestamp": epoch.Add(6 * time.Hour).Unix()}}, map[string]any{"sub_id": opaqueBob}))
	if _, _, err := r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPush, now); err != nil {
		t.Fatal(err)
	}
	// A token bob gets one hour after the SET is refused for the next 5h.
	later := revoke.Token{Sub: "bob", IssuedAt: epoch.Add(time.Hour)}
	if err := m.Index().Check(issuerA, &later, epoch.Add(2*time.Hour)); err == revoke.ErrRevoked {
		t.Errorf("a token issued after the SET arrived is revoked (event_timestamp in the future accepted)")
	}
	// 3h later the operator revokes bob (issued_before = now).
	now = epoch.Add(3 * time.Hour)
	b, err := m.Add(context.Background(), revoke.Entry{Issuer: issuerA, Kind: revoke.KindSub, Value: "bob", Source: revoke.SourceAdmin})
	if err != nil {
		t.Fatal(err)
	}
	// bob's token issued at +2h, 24h lifetime: live until +26h; the
	// operator's entry lives until +27h. At +24h+1m the SET's entry ended.
	tok := revoke.Token{Sub: "bob", IssuedAt: epoch.Add(2 * time.Hour)}
	at := epoch.Add(24*time.Hour + time.Minute)
	if err := m.Index().Check(issuerA, &tok, at); err != revoke.ErrRevoked {
		t.Errorf("operator entry %s (issued_before %s, expires %s) live; token issued %s: Check at %s = %v, want revoked",
			b.ID, b.IssuedBefore.Format(time.RFC3339), b.ExpiresAt.Format(time.RFC3339), tok.IssuedAt.Format(time.RFC3339), at.Format(time.RFC3339), err)
	}
}
