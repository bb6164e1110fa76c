package revoke_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/revoke"
)

// TestRedisForgedChangeNeverLifts: Redis's pub/sub ignores database
// numbers, and ACL key patterns do not restrict channels (Redis 6.0 has no
// channel rules at all; 6.2 lets every user publish by default). So
// another application on the same server — here a client of database 1,
// which cannot read or write one key of the store's database 0 — can
// subscribe to the store's channel, learn an entry's ID and the version
// from its published change, and publish a change of its own. The
// follower applied a message's payload as the change: a forged "lift"
// (or an "add" of the same ID naming something else) removed an
// acknowledged revocation from every replica's copy, until the next poll
// read everything again, and the sender needs only to publish it again
// after each such read to keep the revoked token passing.
func TestRedisForgedChangeNeverLifts(t *testing.T) {
	for _, tt := range []struct {
		name  string
		forge func(id string) string // the change after the version
	}{
		{"delete", func(id string) string { return "d " + id }},
		{"add-same-id", func(id string) string {
			return `a {"id":"` + id + `","issuer":"https://a/","kind":"jti","value":"nothing",` +
				`"created_at":"2030-01-01T00:00:00Z","expires_at":"2030-01-02T00:00:00Z","source":"admin"}`
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startRedis(t)
			st := newStore(t, srv, time.Minute)
			eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(time.Now()) })
			ctx := context.Background()

			// The other application: database 1, and the channel.
			other := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(srv.port), DB: 1})
			defer other.Close()
			ps := other.Subscribe(ctx, revoke.DefaultKeyPrefix+":changes")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}

			iss := "https://a/"
			e, err := st.Add(ctx, revoke.Entry{Issuer: iss, Kind: revoke.KindJTI, Value: "stolen", Source: revoke.SourceAdmin})
			if err != nil {
				t.Fatal(err)
			}
			mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			msg, err := ps.ReceiveMessage(mctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			vs, _, _ := strings.Cut(msg.Payload, " ")
			v, err := strconv.ParseInt(vs, 10, 64)
			if err != nil || !strings.Contains(msg.Payload, e.ID) {
				t.Fatalf("published change %q: want the version and the entry", msg.Payload)
			}

			// Forge the next version's change again and again while the
			// replica is checked: the entry must never be lifted.
			forged := strconv.FormatInt(v+1, 10) + " " + tt.forge(e.ID)
			lifted := 0
			for i := 0; i < 400; i++ {
				if err := other.Publish(ctx, revoke.DefaultKeyPrefix+":changes", forged).Err(); err != nil {
					t.Fatal(err)
				}
				for range 5 {
					if err := st.Index().Check(iss, &revoke.Token{JTI: "stolen"}, time.Now()); !errors.Is(err, revoke.ErrRevoked) {
						lifted++
					}
					time.Sleep(time.Millisecond)
				}
			}
			if lifted > 0 {
				t.Errorf("a message published from another database lifted the acknowledged entry: %d of 2000 checks let the revoked token pass", lifted)
			}
			if got, ok := st.Index().Get(e.ID, time.Now()); !ok || got.Value != "stolen" {
				t.Errorf("the copy holds %+v (%v) for the entry, want the stored one", got, ok)
			}
		})
	}
}
