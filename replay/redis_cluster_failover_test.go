package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
)

// TestRedisClusterFailoverFollowed: SPEC ("Shared state that survives a
// Redis failover"): after a cluster failover jwksverify follows the new
// master without a restart, within 10 s of the promotion. The master of the
// store's slot is SIGKILLed and the Cluster promotes its replica: fresh
// proofs must be taken again within 10 s, and the one used before (with
// acknowledge_replicas: on the promoted replica) refused. go-redis reloads
// a Cluster's slot map on MOVED/ASK/READONLY or when it is a minute old: a
// dead master answers none of them, and every proof of its slots was 503
// for up to that minute.
func TestRedisClusterFailoverFollowed(t *testing.T) {
	c := redistest.StartCluster(t, 2)
	ctx := context.Background()
	const prefix = "{b}test:" // slot 3300: the first master's
	if s, _ := c.Admins[0].ClusterKeySlot(ctx, "b").Result(); s > 5460 {
		t.Fatalf("slot %d not on the first master", s)
	}
	st := newRedis(t, redisconn.Options{Cluster: redisconn.Cluster{Addrs: c.Addrs()},
		Timeout: time.Second, AcknowledgeReplicas: 1}, prefix)
	if ok, err := st.Use(ctx, key(1), time.Minute, t0); !ok || err != nil {
		t.Fatalf("Use() before the failover = %t, %v; want fresh", ok, err)
	}
	promoted := c.KillFirstMaster(t)
	var lastErr error
	for i := 0; ; i++ {
		ok, err := st.Use(ctx, key(byte(10+i)), time.Minute, t0)
		if ok && err == nil {
			t.Logf("fresh proofs taken %v after the promotion", time.Since(promoted).Round(time.Millisecond))
			break
		}
		if !ok && err == nil {
			t.Fatalf("Use() of a new key after the failover = replayed")
		}
		lastErr = err
		if time.Since(promoted) > 10*time.Second {
			t.Fatalf("Use() still fails %v after the promotion: %v; SPEC: within 10 s",
				time.Since(promoted).Round(time.Millisecond), lastErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ok, err := st.Use(ctx, key(1), time.Minute, t0); ok || err != nil {
		t.Errorf("Use() of the proof used before the failover = %t, %v; want replayed", ok, err)
	}
}
