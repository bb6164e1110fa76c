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
// longer for the same reason (TestReplayAcrossSkewedReplicas).
func TestLogoutReplayAcrossSkewedReplicas(t *testing.T) {
	const skew = 20 * time.Second // within the default leeway, 30s
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
	tok := mintA(nil, logoutClaims(map[string]any{"exp": nil, "iat": epoch.Unix()}))
	if _, err := r.Logout(context.Background(), tok, epoch); err != nil {
		t.Fatalf("first Logout() at the accurate replica = %v", err)
	}
	ttl := signals.DefaultJTITTL
	for _, after := range []time.Duration{time.Hour, ttl - time.Second, ttl, ttl + skew/2, ttl + skew - time.Second} {
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
}
