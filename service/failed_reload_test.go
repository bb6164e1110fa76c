package service

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/server"
)

// refusedByServer returns a copy of p that builds up to its server, which
// refuses it (an introspection client without an id): the reload fails
// after the DPoP checker was built.
func refusedByServer(p *config.Plan) *config.Plan {
	bad := *p
	bad.Server.IntrospectionClients = []server.IntrospectionClient{{ID: ""}}
	return &bad
}

// TestFailedReloadKeepsReplayStore: a reload that fails leaves the DPoP
// replay store as it was. Here the refused plan moves the store to Redis;
// the running generation keeps its memory store, but the service recorded
// the Redis one as current, so the next reload — to the very plan that is
// running — started an empty memory store: a proof used before was
// accepted again.
func TestFailedReloadKeepsReplayStore(t *testing.T) {
	jwksSrv := jwksServer(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	load := func(dpopDoc string) *config.Plan {
		t.Helper()
		return writePlan(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
dpop: %s
issuers:
  - issuer: https://idp.example/
    jwks_url: %s
    sender_constraint: {dpop: optional}
`, dpopDoc, jwksSrv.URL))
	}
	running := load(`{replay_store: memory}`)
	l := startLive(t, running)
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	used := dpopInput(t, "used-before", now)
	if _, err := l.Server().DPoP().Check(ctx, used, now); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := l.Reload(ctx, refusedByServer(load(`{replay_store: redis, redis_url: "redis://127.0.0.1:1"}`))); err == nil {
		t.Fatal("Reload(refused plan) = nil, want an error")
	}
	mustReload(t, l, ctx, running)
	if _, err := l.Server().DPoP().Check(ctx, used, now.Add(time.Second)); err == nil {
		t.Error("a proof used before a failed reload is accepted again after reloading the running plan")
	}
}

// TestFailedReloadKeepsReplayBound: a reload that fails leaves the memory
// replay store's bound as the running plan has it. The refused plan lowered
// it to 1 in place: the running generation then refused every proof after
// the first with 503 (store full), under a plan that allows 1000.
func TestFailedReloadKeepsReplayBound(t *testing.T) {
	load := replayBoundPlans(t)
	l := startLive(t, load(1000))
	ctx := context.Background()
	if err := l.Reload(ctx, refusedByServer(load(1))); err == nil {
		t.Fatal("Reload(refused plan) = nil, want an error")
	}
	now := time.Now().Truncate(time.Second)
	for i := range 3 {
		if _, err := l.Server().DPoP().Check(ctx, dpopInput(t, fmt.Sprint("proof-", i), now), now); err != nil {
			t.Errorf("proof %d under the running plan (replay_max_entries 1000): %v", i, err)
		}
	}
}
