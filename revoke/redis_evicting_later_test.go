package revoke_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
)

// TestRedisPolicyTurnedEvictingMakesTheCopyStale: a follower synced with a
// Redis that does not evict stops proving its copy whole once the Redis is
// set to evict at run time (CONFIG SET): its once-a-second poll checks the
// policy as the first read does, so the copy goes stale (503) within
// max_staleness, instead of being called whole while Redis may drop
// entries.
func TestRedisPolicyTurnedEvictingMakesTheCopyStale(t *testing.T) {
	srv := redistest.Start(t)
	st, c := newURLStore(t, srv.URL(), 2*time.Second)
	eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(time.Now()) })
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "maxmemory", "64mb").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the copy stale once Redis may evict", func() bool { return st.Index().Stale(time.Now()) })
}
