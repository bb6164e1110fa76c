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

// TestRedisClockStepKeepsEntries: a replica whose clock stepped ahead past
// an entry's expiry swept the entry from its copy (a metrics scrape's
// Counts, or any change, sweeps), while Redis kept it; once the clock was
// right, the poll found Redis's version equal to the copy's and proved
// the copy whole without reading it again, and the token the entry
// revoked passed until a full read. The copy holds an entry one
// retention past its expiry, as Redis does.
func TestRedisClockStepKeepsEntries(t *testing.T) {
	srv := startRedis(t)
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(srv.port), MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	st, err := revoke.NewRedis(revoke.RedisOptions{Client: c, Retention: time.Hour, MaxStaleness: 30 * time.Second, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(); c.Close() })
	eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(now()) })
	if _, err := st.Add(context.Background(), revoke.Entry{Issuer: "https://a/", Kind: revoke.KindJTI, Value: "stolen", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the entry enforced", func() bool {
		return errors.Is(st.Index().Check("https://a/", &revoke.Token{JTI: "stolen"}, now()), revoke.ErrRevoked)
	})

	for range 2 { // two polls: the Add's own message has come back on the subscription
		synced := st.Index().SyncedAt()
		eventually(t, 10*time.Second, "a poll", func() bool { return st.Index().SyncedAt().After(synced) })
	}
	offset.Store(int64(2 * time.Hour)) // past the entry's expiry (1 h 20 min), within a retention more
	st.Index().Counts(now())           // a metrics scrape sweeps
	offset.Store(0)
	synced := st.Index().SyncedAt()
	eventually(t, 10*time.Second, "a poll at the right clock", func() bool { return st.Index().SyncedAt().After(synced) })
	if err := st.Index().Check("https://a/", &revoke.Token{JTI: "stolen"}, now()); !errors.Is(err, revoke.ErrRevoked) {
		t.Errorf("after the clock stepped 2 h ahead and back: Check() = %v, want revoked (Redis still holds the entry, and the copy is proven whole)", err)
	}
}

// TestRedisSkewedWriterPrunesNothingLive: a writer drops from Redis the
// entries expired for more than a retention, as changes come. It took
// "now" from its own clock, so one replica whose clock ran hours ahead
// erased, with its next change, entries still live for every other
// replica (and their tokens passed at every replica's next full read).
// Redis's own clock decides what has expired.
func TestRedisSkewedWriterPrunesNothingLive(t *testing.T) {
	srv := startRedis(t)
	open := func(skew time.Duration) *revoke.Redis {
		t.Helper()
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(srv.port), MaxRetries: -1,
			DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
		st, err := revoke.NewRedis(revoke.RedisOptions{Client: c, Retention: time.Hour, MaxStaleness: 30 * time.Second,
			Now: func() time.Time { return time.Now().Add(skew) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close(); c.Close() })
		eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(time.Now().Add(skew)) })
		return st
	}
	ctx := context.Background()
	right := open(0)
	if _, err := right.Add(ctx, revoke.Entry{Issuer: "https://a/", Kind: revoke.KindJTI, Value: "stolen", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	ahead := open(3 * time.Hour)
	if _, err := ahead.Add(ctx, revoke.Entry{Issuer: "https://a/", Kind: revoke.KindJTI, Value: "other", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	fresh := open(0) // a full read, as every replica makes at its start and after a gap
	if err := fresh.Index().Check("https://a/", &revoke.Token{JTI: "stolen"}, time.Now()); !errors.Is(err, revoke.ErrRevoked) {
		t.Errorf("after a change by a replica whose clock is 3 h ahead: Check() = %v, want revoked (the entry is live at Redis's clock)", err)
	}
}
