package replay_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
)

// TestRedisClusterEvictionCheckOnlyTheKeysMaster: the eviction check reads
// the master a proof's key lives on, not every master of the Cluster. A
// master that is down (a failover not done yet, or a Cluster with
// cluster-require-full-coverage no) failed every proof, those of the
// healthy masters' slots too, each after a round trip to the dead one;
// before the check they were taken.
func TestRedisClusterEvictionCheckOnlyTheKeysMaster(t *testing.T) {
	ctx := context.Background()
	var nodes []*redistest.Server
	var admins []*redis.Client
	for range 2 {
		srv := redistest.Start(t, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf"),
			"--cluster-node-timeout", "60000", "--cluster-require-full-coverage", "no")
		nodes = append(nodes, srv)
		a := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
		t.Cleanup(func() { a.Close() })
		admins = append(admins, a)
	}
	if err := admins[0].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 8191).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admins[1].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 8192, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admins[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(nodes[1].Port)).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, a := range admins {
		for {
			info, err := a.ClusterInfo(ctx).Result()
			nodesOut, _ := a.ClusterNodes(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Count(nodesOut, "connected") == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster not ok within 15s: %q, %v", info, err)
			}
			time.Sleep(20 * time.Millisecond) // polling the nodes' own state
		}
	}
	// Every key of the store in one slot ({x}); the other master is the
	// one that goes down.
	const prefix = "{x}test:"
	slot, err := admins[0].ClusterKeySlot(ctx, "x").Result()
	if err != nil {
		t.Fatal(err)
	}
	down := nodes[0]
	if slot < 8192 {
		down = nodes[1]
	}
	st := newRedis(t, redisconn.Options{Cluster: redisconn.Cluster{Addrs: []string{nodes[0].Addr(), nodes[1].Addr()}},
		Timeout: 2 * time.Second}, prefix)
	if ok, err := st.Use(ctx, key(1), time.Minute, t0); !ok || err != nil {
		t.Fatalf("Use() with both masters up = %t, %v; want fresh", ok, err)
	}
	down.Stop()
	// The eviction reading taken with both masters up is reused for a
	// second (redisconn's evictionCheckEvery): wait it out.
	time.Sleep(1100 * time.Millisecond)
	for i := range 3 {
		if ok, err := st.Use(ctx, key(byte(10+i)), time.Minute, t0); !ok || err != nil {
			t.Errorf("Use() of a key whose master is up, another master down = %t, %v; want fresh", ok, err)
		}
	}
	if ok, err := st.Use(ctx, key(1), time.Minute, t0); ok || err != nil {
		t.Errorf("Use() of the first key again = %t, %v; want replayed", ok, err)
	}
}
