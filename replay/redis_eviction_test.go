package replay_test

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
)

// A Redis that may evict keys (maxmemory with an eviction policy: volatile-lru
// is ElastiCache's and Azure Cache's default) silently forgets proofs under
// memory pressure: a proof accepted once must never be accepted again, so a
// store that cannot keep its keys must fail closed (an error: 503), not
// answer fresh to the replay.
func TestRedisEvictingPolicyNeverAcceptsAReplay(t *testing.T) {
	for _, policy := range []string{"volatile-lru", "allkeys-lru"} {
		t.Run(policy, func(t *testing.T) {
			srv := redistest.Start(t, "--maxmemory", "3mb", "--maxmemory-policy", policy)
			const prefix = "test:evict:"
			st := newRedis(t, redisconn.Options{URL: srv.URL(), Timeout: 2 * time.Second}, prefix)
			ctx := context.Background()
			first := key(1)
			ok, err := st.Use(ctx, first, time.Minute, t0)
			if err != nil {
				t.Logf("first Use() = %v (a store refusing an evicting Redis)", err)
			} else if !ok {
				t.Fatal("first Use() = replayed; want fresh")
			}
			// Other proofs fill Redis until the first one's key is gone.
			rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer rc.Close()
			k := prefix + hex.EncodeToString(first[:])
			evicted := false
			for i := 0; i < 200000 && !evicted; i++ {
				var kk [32]byte
				kk[0], kk[1], kk[2], kk[3] = 0xee, byte(i>>16), byte(i>>8), byte(i)
				// Written directly (the store may refuse): what any other
				// proof, signal jti or cache entry does to memory.
				rc.Set(ctx, prefix+hex.EncodeToString(kk[:]), "0123456789abcdef0123456789abcdef", time.Minute)
				if i%1000 == 999 {
					n, err := rc.Exists(ctx, k).Result()
					if err != nil {
						t.Fatal(err)
					}
					evicted = n == 0
				}
			}
			if err == nil && !evicted {
				t.Skip("the first proof's key was never evicted")
			}
			if ok, err := st.Use(ctx, first, time.Minute, t0); ok {
				t.Fatalf("replayed proof after Redis evicted its key: Use() = fresh, %v; want an error or replayed", err)
			}
		})
	}
}
