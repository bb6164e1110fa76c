package introspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/introspect"
)

// TestSharedCacheDiscoveryNotYetRead: replicas of one config with a
// discovered endpoint share their answers, also one whose discovery has
// not been read yet (restarted while the IdP's discovery document is
// unreachable): the answers in Redis, fresh and then stale, serve it as
// they serve the replica that discovered the endpoint (Options.Endpoint:
// "calls are answered keys_unavailable (stale answers aside)").
func TestSharedCacheDiscoveryNotYetRead(t *testing.T) {
	srv := redistest.Start(t)
	up, url := newServer(t)
	up.set("tok", activeAnswer(t0.Add(2*time.Hour)))
	key := sharedKey(t, 'k', 32)
	o := introspect.Options{SharedKeyFile: key, MaxTTL: time.Minute, StaleFor: time.Hour}
	a, b := o, o
	a.Endpoint = func() string { return url }
	b.Endpoint = func() string { return "" } // discovery not read yet
	ra, rb := replicas(t, 1, srv, a)[0], replicas(t, 1, srv, b)[0]
	if _, err := ra.Introspect(context.Background(), "tok", t0); err != nil {
		t.Fatalf("replica with the endpoint: %v", err)
	}
	if _, err := rb.Introspect(context.Background(), "tok", t0.Add(time.Second)); err != nil {
		t.Errorf("replica without the endpoint, fresh answer in Redis: %v, want the answer", err)
	}
	if _, err := rb.Introspect(context.Background(), "tok", t0.Add(10*time.Minute)); err != nil {
		t.Errorf("replica without the endpoint, stale answer in Redis: %v, want the stale answer", err)
	}
}
