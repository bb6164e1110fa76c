package revoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/revoke"
)

// TestRedisLostMessageIsReadAgain: a change whose pub/sub message a
// follower never got (published while it reconnected; here, written
// without one) is read by the follower's poll, which finds Redis's version
// ahead of its copy, looks again a moment later (a message on its way has
// arrived by then) and reads everything again; without that the copy is
// never whole again (stale, 503) and the change is not enforced until the
// subscription is lost. SPEC enforces an acknowledged entry everywhere
// within 1 s: each lost change is enforced within 8s whatever the machine's
// load, and the quickest of three within 1 s (a follower that waits for a
// second full poll interval takes at least 1 s every time).
func TestRedisLostMessageIsReadAgain(t *testing.T) {
	srv := redistest.Start(t)
	st, c := newURLStore(t, srv.URL(), 10*time.Second)
	eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(time.Now()) })
	ctx := context.Background()
	quickest := time.Hour
	for i := range 3 {
		// Another writer's change, its message lost: the entry, its
		// expiry and the version, as the add script writes them.
		now := time.Now().UTC()
		id, jti := fmt.Sprintf("lost-%d", i), fmt.Sprintf("j-lost-%d", i)
		e := revoke.Entry{ID: id, Issuer: "https://a/", Kind: revoke.KindJTI, Value: jti,
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
		changed := time.Now()
		tok := revoke.Token{JTI: jti, IssuedAt: now.Add(-time.Minute)}
		eventually(t, 8*time.Second, "the change whose message was lost is enforced", func() bool {
			return errors.Is(st.Index().Check("https://a/", &tok, time.Now()), revoke.ErrRevoked)
		})
		quickest = min(quickest, time.Since(changed))
	}
	if quickest >= time.Second {
		t.Errorf("the quickest of three lost changes was enforced after %v, want within 1s (SPEC)", quickest)
	}
}
