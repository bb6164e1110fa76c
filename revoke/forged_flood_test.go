package revoke_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/revoke"
)

// TestRedisForgedMessagesCostNoFullRead: whoever can publish on the
// store's channel (another database's client: TestRedisForgedChangeNeverLifts)
// can send a message of a later version than the next one, or one that
// does not decode. Each made every replica read the whole store at once (a
// Lua script over HGETALL, which blocks Redis for as long as the store is
// large): a flood of them was a full read per message per replica. A
// message of a version Redis has not handed out is not Redis's: it costs
// one read of the version; one that does not decode is left to the next
// poll (at most one full read a poll interval).
func TestRedisForgedMessagesCostNoFullRead(t *testing.T) {
	srv := startRedis(t)
	st := newStore(t, srv, time.Minute)
	eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(time.Now()) })
	ctx := context.Background()
	iss := "https://a/"
	if _, err := st.Add(ctx, revoke.Entry{Issuer: iss, Kind: revoke.KindJTI, Value: "stolen", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	other := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(srv.port), DB: 1})
	defer other.Close()
	fullReads := func() int {
		info, err := other.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_hgetall:calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				return n
			}
		}
		return 0
	}
	before := fullReads()
	start := time.Now()
	const n = 300
	for i := range n {
		forged := []string{"1000000 d x", "x d y", "2 z y", "3 a {"}[i%4]
		if err := other.Publish(ctx, revoke.DefaultKeyPrefix+":changes", forged).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // the follower takes the messages
	polls := int(time.Since(start)/time.Second) + 2
	if got := fullReads() - before; got > polls {
		t.Errorf("%d forged messages made %d full reads of the store in %s, want at most %d (one a poll)", n, got, time.Since(start).Round(time.Millisecond), polls)
	}
	if err := st.Index().Check(iss, &revoke.Token{JTI: "stolen"}, time.Now()); err == nil {
		t.Error("the entry was lifted")
	}
}
