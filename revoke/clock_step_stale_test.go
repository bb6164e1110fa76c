package revoke_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/revoke"
)

// TestRedisCopyGoesStaleAfterClockStepBack: the copy is proven whole at
// the follower's clock. A clock that stepped ahead (an NTP step undone, a
// VM whose clock ran fast and was corrected) recorded a proof in the
// future; once the clock was back, no later proof could replace it (the
// proof time only went forward), and the copy read as fresh until the
// clock caught up again: with Redis gone, a replica that missed every
// revocation since kept answering its stale copy, and /readyz said ready,
// for the size of the step (here an hour) instead of max_staleness.
func TestRedisCopyGoesStaleAfterClockStepBack(t *testing.T) {
	for _, step := range []time.Duration{time.Hour, 10 * time.Minute} {
		t.Run(step.String(), func(t *testing.T) {
			srv := startRedis(t)
			var offset atomic.Int64
			now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(srv.port), MaxRetries: -1,
				DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
			const maxStale = 2 * time.Second
			st, err := revoke.NewRedis(revoke.RedisOptions{Client: c, Retention: time.Hour, MaxStaleness: maxStale, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close(); c.Close() })
			eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(now()) })

			offset.Store(int64(step)) // the clock steps ahead; the follower proves the copy whole at it
			eventually(t, 10*time.Second, "a sync at the stepped clock", func() bool {
				return st.Index().SyncedAt().After(time.Now().Add(step / 2))
			})
			offset.Store(0) // and back
			// Proofs at the right clock go on while Redis is there.
			eventually(t, 10*time.Second, "fresh after the step back", func() bool { return !st.Index().Stale(now()) })
			srv.stop()
			eventually(t, 10*maxStale, "stale once Redis is gone", func() bool { return st.Index().Stale(now()) })
		})
	}
}
