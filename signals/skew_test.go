package signals_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
	"github.com/jwksverify/jwksverify/verify"
)

// storeClock is a replay store shared by replicas that expires its entries
// on a clock of its own, as Redis does (PX), whatever the replica's clock
// says.
type storeClock struct {
	m   *replay.Memory
	now *time.Time
}

func (s storeClock) Use(ctx context.Context, key [32]byte, ttl time.Duration, _ time.Time) (bool, error) {
	return s.m.Use(ctx, key, ttl, *s.now)
}

// TestLogoutReplayAcrossSkewedReplicas: two replicas share a replay store
// whose entries expire on the store's clock; one replica's clock is behind
// the other's (and the store's) by less than the leeway, the skew the
// leeway is there for. A logout token first taken at the accurate replica
// is refused by its age at iat + the TTL by the late replica's clock; until
// then the store must still hold its jti, or a replay there stores its
// entry again (undoing an operator's lift), as DPoP's jti is kept a leeway
// longer for the same reason (TestReplayAcrossSkewedReplicas). A token
// whose iat is ahead of the accurate replica's clock (within the leeway) is
// taken by its age that much longer, so its jti must be kept that much
// longer too: the TTL counts from iat, not from the first use.
func TestLogoutReplayAcrossSkewedReplicas(t *testing.T) {
	const skew = 20 * time.Second // within the default leeway, 30s
	for _, tt := range []struct {
		name  string
		ahead time.Duration // iat − the accurate replica's clock at the first use
	}{
		{"iat-now", 0},
		{"iat-ahead-within-leeway", 20 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			keys := &cache.Keys{}
			keys.Store(cache.NewSet([]*cache.Key{key(t, testkeys.RSA2048A, "rsa-a")}, nil, epoch, epoch.Add(72*time.Hour)))
			v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: issuerA, Keys: keys}}, Now: func() time.Time { return epoch }})
			if err != nil {
				t.Fatal(err)
			}
			mem, err := replay.NewMemory(0)
			if err != nil {
				t.Fatal(err)
			}
			storeNow := epoch
			store := &adder{}
			r, err := signals.New(signals.Options{
				Verifier: v, Replay: storeClock{m: mem, now: &storeNow}, Store: store, Logger: slog.New(slog.DiscardHandler),
				Issuers: []signals.Issuer{{Issuer: issuerA, Logout: &signals.Logout{Audiences: []string{clientID}, Revoke: signals.RevokeSession}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			tok := mintA(nil, logoutClaims(map[string]any{"exp": nil, "iat": epoch.Add(tt.ahead).Unix()}))
			if _, err := r.Logout(context.Background(), tok, epoch); err != nil {
				t.Fatalf("first Logout() at the accurate replica = %v", err)
			}
			ttl := signals.DefaultJTITTL
			// The late replica takes the token by its age until its clock
			// reaches iat + ttl: the store's clock is then at
			// ttl + ahead + skew.
			for _, after := range []time.Duration{time.Hour, ttl - time.Second, ttl, ttl + tt.ahead + skew/2, ttl + tt.ahead + skew - time.Second} {
				storeNow = epoch.Add(after)
				late := storeNow.Add(-skew) // the late replica's clock
				_, err := r.Logout(context.Background(), tok, late)
				if err == nil || errors.Is(err, signals.ErrUnavailable) {
					t.Errorf("the same token %s after its first use, at a replica %s behind: Logout() = %v, want refused", after, skew, err)
				}
			}
			if n := len(store.stored()); n != 1 {
				t.Errorf("stored %d entries, want 1: a replay revokes nothing more", n)
			}
		})
	}
}

// TestSETJTIKeptUntilAFarExp: a SET's jti is kept until its exp (plus the
// leeway) when that is later than the TTL, since a SET has no age bound
// and is taken until then. An exp so far ahead that exp − now saturates a
// Duration must keep it at least as long as a nearer one does, not wrap
// around to the TTL alone.
func TestSETJTIKeptUntilAFarExp(t *testing.T) {
	keys := &cache.Keys{}
	keys.Store(cache.NewSet([]*cache.Key{key(t, testkeys.RSA2048A, "rsa-a")}, nil, epoch, epoch.Add(72*time.Hour)))
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: issuerA, Keys: keys}}, Now: func() time.Time { return epoch }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		exp  time.Time
	}{
		{"in-two-days", epoch.Add(48 * time.Hour)},
		{"in-year-2400", time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"in-year-9999", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mem, err := replay.NewMemory(0)
			if err != nil {
				t.Fatal(err)
			}
			store := &adder{}
			r, err := signals.New(signals.Options{
				Verifier: v, Replay: mem, Store: store, Logger: slog.New(slog.DiscardHandler),
				Issuers: []signals.Issuer{{Issuer: issuerA, SSF: &signals.SSF{Audiences: []string{ssfAud}, PushBearer: bearerA}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			tok := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}},
				map[string]any{"sub_id": issSubA, "iat": epoch.Unix(), "exp": tt.exp.Unix()}))
			if _, _, err := r.Receive(context.Background(), issuerA, tok, revoke.SourceSSFPush, epoch); err != nil {
				t.Fatalf("first Receive() = %v", err)
			}
			later := epoch.Add(signals.DefaultJTITTL + time.Hour)
			if _, _, err := r.Receive(context.Background(), issuerA, tok, revoke.SourceSSFPush, later); !errors.Is(err, signals.ErrReplayed) {
				t.Errorf("the same SET %s later, before its exp: Receive() = %v, want %v", later.Sub(epoch), err, signals.ErrReplayed)
			}
			if n := len(store.stored()); n != 1 {
				t.Errorf("stored %d entries, want 1", n)
			}
		})
	}
}
