package revoke_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/revoke"
)

// TestRedisClusterFailoverRevocations: two replicas' stores over a Cluster
// (acknowledge_replicas 1); revocations are added at one while the master
// of the store's slot is SIGKILLed and the Cluster promotes its replica.
// SPEC: jwksverify follows the new master within 10 s of the promotion, and
// no acknowledged revocation is lost: Add succeeds again, both copies sync
// with the new master (their followers subscribe there) and hold every
// entry acknowledged before, during and after the failover.
func TestRedisClusterFailoverRevocations(t *testing.T) {
	c := redistest.StartCluster(t, 2)
	ctx := context.Background()
	const prefix = "{b}jwksverify:revoke" // slot 3300: the first master's
	if s, _ := c.Admins[0].ClusterKeySlot(ctx, prefix).Result(); s > 5460 {
		t.Fatalf("the store's slot %d is not the first master's", s)
	}
	var stores []*revoke.Redis
	for range 2 {
		cl, err := redisconn.New(redisconn.Options{Cluster: redisconn.Cluster{Addrs: c.Addrs()},
			Timeout: time.Second, AcknowledgeReplicas: 1})
		if err != nil {
			t.Fatal(err)
		}
		st, err := revoke.NewRedis(revoke.RedisOptions{Client: cl, Writer: cl, Retention: time.Hour, MaxStaleness: 5 * time.Second, KeyPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close(); cl.Close() })
		stores = append(stores, st)
	}
	for _, st := range stores {
		eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(time.Now()) })
	}
	const iss = "https://a/"
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			jti := fmt.Sprintf("r%d", i)
			if _, err := stores[0].Add(ctx, revoke.Entry{Issuer: iss, Kind: revoke.KindJTI, Value: jti, Source: revoke.SourceAdmin}); err == nil {
				mu.Lock()
				acked = append(acked, jti)
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	promoted := c.KillFirstMaster(t)
	// Revocations are acknowledged again within 10 s.
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n > before+5 {
			break
		}
		if time.Since(promoted) > 10*time.Second {
			close(stop)
			wg.Wait()
			t.Fatalf("no revocation acknowledged within 10 s of the promotion (%d before the kill, %d in all)", before, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("revocations acknowledged again %v after the promotion", time.Since(promoted).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	for i, st := range stores {
		eventually(t, 10*time.Second, fmt.Sprintf("store %d synced after the promotion", i), func() bool {
			return st.Index().SyncedAt().After(promoted) && !st.Index().Stale(time.Now())
		})
		now := time.Now()
		missing := 0
		for _, jti := range acked {
			if err := st.Index().Check(iss, &revoke.Token{JTI: jti}, now); !errors.Is(err, revoke.ErrRevoked) {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("store %d: %d of %d acknowledged revocations not enforced", i, missing, len(acked))
		}
	}
	t.Logf("%d revocations acknowledged (%d before the kill), each enforced by both", len(acked), before)
}
