package revoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/revoke"
)

// TestRedisLostMessageIsReadAgain: a change whose pub/sub message a
// follower never got (published while it reconnected; here, written
// without one) is read by the follower's poll, which finds Redis's version
// ahead of its copy twice in a row and reads everything again; without
// that the copy is never whole again (stale, 503) and the change is not
// enforced until the subscription is lost.
func TestRedisLostMessageIsReadAgain(t *testing.T) {
	srv := redistest.Start(t)
	st, c := newURLStore(t, srv.URL(), 10*time.Second)
	eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(time.Now()) })
	ctx := context.Background()
	// Another writer's change, its message lost: the entry, its expiry and
	// the version, as the add script writes them.
	now := time.Now().UTC()
	e := revoke.Entry{ID: "lost", Issuer: "https://a/", Kind: revoke.KindJTI, Value: "j-lost",
		CreatedAt: now, ExpiresAt: now.Add(2 * time.Hour), Source: revoke.SourceAdmin}
	b, _ := json.Marshal(e)
	const prefix = revoke.DefaultKeyPrefix
	if err := c.HSet(ctx, prefix+":entries", e.ID, b).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ZAdd(ctx, prefix+":expiry", redis.Z{Score: float64(e.ExpiresAt.UnixMilli()), Member: e.ID}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Incr(ctx, prefix+":version").Err(); err != nil {
		t.Fatal(err)
	}
	tok := revoke.Token{JTI: "j-lost", IssuedAt: now.Add(-time.Minute)}
	eventually(t, 8*time.Second, "the change whose message was lost is enforced", func() bool {
		return errors.Is(st.Index().Check("https://a/", &tok, time.Now()), revoke.ErrRevoked)
	})
}
