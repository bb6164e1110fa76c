package redistest

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of three masters (slots 0-5460, 5461-10922,
// 10923-16383) whose first master has Replicas replicas, with
// cluster-node-timeout 1000 ms: a master killed is replaced by one of its
// replicas (the two other masters vote) within a few seconds.
type Cluster struct {
	// Nodes are the masters 0-2, then the first master's replicas.
	Nodes []*Server
	// Admins are plain clients of Nodes, one each.
	Admins []*redis.Client
}

// StartCluster starts the cluster and waits until every node sees every
// other one and the replicas are in sync.
func StartCluster(t testing.TB, replicas int) *Cluster {
	t.Helper()
	ctx := context.Background()
	c := &Cluster{}
	for range 3 + replicas {
		srv := Start(t, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf"),
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0", "--dir", t.TempDir())
		c.Nodes = append(c.Nodes, srv)
		a := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
		t.Cleanup(func() { a.Close() })
		c.Admins = append(c.Admins, a)
	}
	for i, r := range [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}} {
		if err := c.Admins[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", r[0], r[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range c.Nodes[1:] {
		if err := c.Admins[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(s.Port)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitFor(t, "cluster ok", func() bool {
		for _, a := range c.Admins {
			info, err := a.ClusterInfo(ctx).Result()
			nodes, _ := a.ClusterNodes(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || strings.Count(nodes, " connected") != len(c.Nodes) {
				return false
			}
		}
		return true
	})
	id, err := c.Admins[0].Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Admins[3:] {
		if err := a.Do(ctx, "CLUSTER", "REPLICATE", id).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitFor(t, "replicas in sync", func() bool {
		info, err := c.Admins[0].Info(ctx, "replication").Result()
		return err == nil && strings.Count(info, "state=online") == replicas
	})
	return c
}

// WaitFor polls ok until it holds, failing the test after 15 s.
func (c *Cluster) WaitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling the nodes' own state
	}
}

// Addrs are every node's host:port.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, s := range c.Nodes {
		a = append(a, s.Addr())
	}
	return a
}

// KillFirstMaster SIGKILLs the master of slots 0-5460 and waits until one
// of its replicas is promoted by the Cluster's own failover. It returns the
// moment the promotion was seen.
func (c *Cluster) KillFirstMaster(t testing.TB) time.Time {
	t.Helper()
	ctx := context.Background()
	c.Nodes[0].Stop()
	c.WaitFor(t, "a replica promoted", func() bool {
		for _, a := range c.Admins[3:] {
			if role, err := a.Do(ctx, "ROLE").Slice(); err == nil && len(role) > 0 && role[0] == "master" {
				return true
			}
		}
		return false
	})
	return time.Now()
}
