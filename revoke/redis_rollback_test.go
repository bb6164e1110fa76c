package revoke_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/revoke"
)

// TestRedisVersionReusedAfterRollback: a failover that loses the last write
// W (version N: asynchronous replication, or a write whose WAIT reported
// too few replicas and was never acknowledged) leaves the promoted master
// at N-1, while the replicas that applied W's published change hold N. The
// next revocation X, acknowledged on the new master, is version N again:
// the replica that added it, and every follower whose subscription lived
// through the switch (go-redis's failover client does not drop its pub/sub
// connections; a Cluster failover kills no clients), take N for a change
// they already hold and skip it, and the poll then proves the copy "whole"
// (version N = N). X is acknowledged and enforced nowhere until a
// reconnection. The rollback below is what the promoted replica holds.
func TestRedisVersionReusedAfterRollback(t *testing.T) {
	srv := startRedis(t)
	a, b := newStore(t, srv, 3*time.Second), newWriterStore(t, srv, 3*time.Second)
	ctx := context.Background()
	for _, st := range []*revoke.Redis{a, b} {
		eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(time.Now()) })
	}
	iss := "https://a/"
	check := func(st *revoke.Redis, jti string) error {
		return st.Index().Check(iss, &revoke.Token{JTI: jti}, time.Now())
	}
	w, err := a.Add(ctx, revoke.Entry{Issuer: iss, Kind: revoke.KindJTI, Value: "lost", Source: revoke.SourceAdmin})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "propagation", func() bool { return check(b, "lost") == revoke.ErrRevoked })

	// The failover: the new master never got W.
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(srv.port)})
	defer rc.Close()
	p := revoke.DefaultKeyPrefix
	if err := rc.Eval(ctx, `redis.call('HDEL', KEYS[1], ARGV[1]); redis.call('ZREM', KEYS[2], ARGV[1]); return redis.call('DECR', KEYS[3])`,
		[]string{p + ":entries", p + ":expiry", p + ":version"}, w.ID).Err(); err != nil {
		t.Fatal(err)
	}

	if _, err := a.Add(ctx, revoke.Entry{Issuer: iss, Kind: revoke.KindJTI, Value: "acked", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	if err := check(a, "acked"); !errors.Is(err, revoke.ErrRevoked) {
		t.Errorf("at the acknowledging replica, Check(acked) = %v, want revoked", err)
	}
	// The next polls read everything again (SPEC: within 1 s); before the
	// fix nothing did until a reconnection, so 10 s still tells them apart
	// on a busy machine.
	for name, st := range map[string]*revoke.Redis{"a": a, "b": b} {
		eventually(t, 10*time.Second, "replica "+name+" enforces the acknowledged entry", func() bool {
			return errors.Is(check(st, "acked"), revoke.ErrRevoked)
		})
	}
}
