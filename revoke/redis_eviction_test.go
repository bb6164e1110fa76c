package revoke_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/revoke"
)

// A Redis with maxmemory and an evicting policy (allkeys-lru) forgets the
// revocation entries under memory pressure: the replicas read everything
// again (the version went back) and every revoked token passes, at the
// replicas running and at one that starts. A store that cannot keep its
// entries must fail closed (stale: 503), never answer a revoked token nil.
func TestRedisEvictingPolicyKeepsRevocations(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "3mb", "--maxmemory-policy", "allkeys-lru")
	newStore := func() *revoke.Redis {
		st, _ := newURLStore(t, srv.URL(), 2*time.Second)
		return st
	}
	iss := "https://a/"
	check := func(st *revoke.Redis) error {
		return st.Index().Check(iss, &revoke.Token{JTI: "j1"}, time.Now())
	}
	a := newStore()
	ctx := context.Background()
	time.Sleep(500 * time.Millisecond) // the follower's first sync (or its refusal)
	if _, err := a.Add(ctx, revoke.Entry{Issuer: iss, Kind: revoke.KindJTI, Value: "j1", Source: revoke.SourceAdmin}); err != nil {
		t.Logf("Add() = %v (a store refusing an evicting Redis acknowledges nothing)", err)
	} else {
		// Acknowledged: other keys (DPoP proofs, cache entries) fill Redis.
		rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		defer rc.Close()
		gone := false
		for i := 0; i < 200000 && !gone; i++ {
			rc.Set(ctx, "jwksverify:dpop:"+strconv.Itoa(i), "0123456789abcdef0123456789abcdef", time.Minute)
			if i%1000 == 999 {
				n, err := rc.Exists(ctx, "{jwksverify:revoke}:entries").Result()
				if err != nil {
					t.Fatal(err)
				}
				gone = n == 0
			}
		}
		if !gone {
			t.Fatal("Add() was acknowledged, and the entries were never evicted: the test shows nothing")
		}
	}
	time.Sleep(3 * time.Second) // two polls, and past max_staleness
	b := newStore()
	time.Sleep(3 * time.Second)
	for name, st := range map[string]*revoke.Redis{"running replica": a, "starting replica": b} {
		if err := check(st); !errors.Is(err, revoke.ErrRevoked) && !errors.Is(err, revoke.ErrStale) {
			t.Errorf("%s: Check(revoked j1) after Redis evicted the entries = %v; want revoked or stale", name, err)
		}
	}
}
