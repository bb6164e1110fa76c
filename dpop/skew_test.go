package dpop_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
)

// serverClockStore is a replay store shared by replicas that expires its
// entries on a clock of its own, as Redis does (PX), whatever the
// replica's clock says.
type serverClockStore struct {
	m   *replay.Memory
	now *time.Time
}

func (s serverClockStore) Use(ctx context.Context, key [32]byte, ttl time.Duration, _ time.Time) (bool, error) {
	return s.m.Use(ctx, key, ttl, *s.now)
}

// TestReplayAcrossSkewedReplicas: two replicas share a replay store whose
// entries expire on the store's clock; one replica's clock runs ahead by
// the leeway (the skew the leeway is there for). A proof whose iat is
// ahead within the leeway at that replica is first used there; the other
// replica accepts the same iat until iat + max_age by its own clock, and
// the store must still hold the jti until then: max_age + 2 × leeway.
func TestReplayAcrossSkewedReplicas(t *testing.T) {
	const leeway = 30 * time.Second
	m, err := replay.NewMemory(100)
	if err != nil {
		t.Fatal(err)
	}
	server := t0 // the store's clock, and the accurate replica's
	store := serverClockStore{m: m, now: &server}
	c := newChecker(t, dpop.Options{Replay: store}) // max_age 60s
	jkt := thumb(t, testkeys.EC256A)
	p := proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": t0.Add(2 * leeway).Unix(), "jti": "skew-1"})

	// The replica ahead by leeway: iat is leeway ahead of its clock.
	if _, err := c.Check(context.Background(), input(p, jkt), t0.Add(leeway)); err != nil {
		t.Fatalf("Check(at the replica ahead) = %v; want accepted", err)
	}
	// The accurate replica, at every second until iat + max_age.
	for s := time.Duration(0); t0.Add(s).Before(t0.Add(2*leeway + 60*time.Second)); s += time.Second {
		server = t0.Add(s)
		_, err := c.Check(context.Background(), input(p, jkt), server)
		if err == nil {
			t.Fatalf("Check(the same proof at the accurate replica, %s after the first use) = accepted; want refused", s)
		}
		if s > 2*leeway && !errors.Is(err, dpop.ErrReplayed) {
			t.Fatalf("Check(%s after the first use) = %v; want %v", s, err, dpop.ErrReplayed)
		}
	}
}
