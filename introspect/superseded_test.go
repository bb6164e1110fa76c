package introspect_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// TestSupersededAnswerNotServedStale: once the endpoint has answered again
// for a token, the earlier answer is never served stale, also when the new
// answer is not kept (its exp already past: the server has cut the
// token's life short). The earlier answer stayed in the cache (in the
// process, or in Redis with cache.shared) and, the endpoint failing next,
// was served with its own later exp: active again, after the server had
// said otherwise.
func TestSupersededAnswerNotServedStale(t *testing.T) {
	for _, mode := range []string{"memory", "shared"} {
		t.Run(mode, func(t *testing.T) {
			srv, url := newServer(t)
			o := introspect.Options{URL: url, MaxTTL: time.Minute, StaleFor: 5 * time.Minute}
			var c *introspect.Client
			if mode == "shared" {
				o.SharedKeyFile = sharedKey(t, 'k', 32)
				c = replicas(t, 1, redistest.Start(t), o)[0]
			} else {
				c = newClient(t, o)
			}
			ctx := context.Background()
			srv.set("tok", activeAnswer(t0.Add(time.Hour)))
			if _, err := c.Introspect(ctx, "tok", t0); err != nil {
				t.Fatal(err)
			}
			// Past max_ttl the server answers with an exp already gone.
			later := t0.Add(61 * time.Second)
			srv.set("tok", fmt.Sprintf(`{"active":true,"sub":"alice","exp":%d}`, t0.Add(30*time.Second).Unix()))
			if _, err := c.Introspect(ctx, "tok", later); err != nil {
				t.Fatalf("Introspect() of the answer with a past exp = %v, want it (the verifier refuses its exp)", err)
			}
			srv.setFail(true)
			if ans, err := c.Introspect(ctx, "tok", later.Add(time.Second)); !errors.Is(err, verify.ErrKeysUnavailable) {
				t.Errorf("the endpoint failing after it answered with a past exp: Introspect() = %s, %v; want keys_unavailable, not the earlier answer", claimsOf(ans), err)
			}
		})
	}
}

func claimsOf(a *verify.Introspection) string {
	if a == nil {
		return "<nil>"
	}
	return string(a.Claims)
}
