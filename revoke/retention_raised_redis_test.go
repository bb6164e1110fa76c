package revoke_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/revoke"
)

// TestRedisEntryOutlivesReplicaRetention: replicas sharing one
// Redis during a rolling change of revocation.retention (1h → 24h), or a
// replica restarted with the larger one. An entry stored through the old
// replica carries its 1h20m expiry; the new replica accepts tokens living
// up to 24h (max_lifetime defaults to the retention, the stage bounds by
// Retention()), so a token the entry named passes there once the entry
// ends, long before its exp.
func TestRedisEntryOutlivesReplicaRetention(t *testing.T) {
	srv := startRedis(t)
	var off atomic.Int64
	t0 := time.Now()
	clock := func() time.Time { return time.Now().Add(time.Duration(off.Load())) }
	open := func(ret time.Duration) *revoke.Redis {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(srv.port), MaxRetries: -1})
		st, err := revoke.NewRedis(revoke.RedisOptions{Client: c, Retention: ret, MaxStaleness: 5 * time.Second, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close(); c.Close() })
		return st
	}
	old, young := open(time.Hour), open(24*time.Hour)
	tok := revoke.Token{Sub: "alice", IssuedAt: t0.Add(-time.Minute)}
	eventually(t, 20*time.Second, "both synced", func() bool {
		return !old.Index().Stale(clock()) && !young.Index().Stale(clock())
	})
	if _, err := old.Add(context.Background(), revoke.Entry{Issuer: "https://a/", Kind: revoke.KindSub, Value: "alice", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the 24h replica has the entry", func() bool {
		return errors.Is(young.Index().Check("https://a/", &tok, clock()), revoke.ErrRevoked)
	})
	off.Store(int64(2 * time.Hour)) // the token (iat t0-1m, exp +12h) is still valid under 24h
	eventually(t, 20*time.Second, "the 24h replica synced at the new time", func() bool {
		return !errors.Is(young.Index().Check("https://a/", &tok, clock()), revoke.ErrStale)
	})
	if err := young.Index().Check("https://a/", &tok, clock()); !errors.Is(err, revoke.ErrRevoked) {
		t.Errorf("2h later at the replica whose retention is %s: Check = %v, want revoked (a 12h token issued before the entry passes)", young.Retention(), err)
	}
}
