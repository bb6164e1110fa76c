package revoke_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/revoke"
)

// TestRedisPolicyTurnedEvictingMakesTheCopyStale: a follower synced with a
// Redis that does not evict stops proving its copy whole once the Redis is
// set to evict at run time (CONFIG SET): its once-a-second poll checks the
// policy as the first read does, so the copy goes stale (503) within
// max_staleness, instead of being called whole while Redis may drop
// entries.
func TestRedisPolicyTurnedEvictingMakesTheCopyStale(t *testing.T) {
	srv := redistest.Start(t)
	c, err := redisconn.New(redisconn.Options{URL: srv.URL(), Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st, err := revoke.NewRedis(revoke.RedisOptions{Client: c, Writer: c, Retention: time.Hour, MaxStaleness: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(); c.Close() })
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
