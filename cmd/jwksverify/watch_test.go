package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/service"
)

// TestWatchAppliesContentWrittenDuringAFailedLoad: a configuration file
// written in place (an editor or `cat >` truncates, then writes) is read by
// the watcher half-written; the load fails, and the rest of the write lands
// while it fails. The content then complete is a change the service has
// not tried: it must be loaded at a following poll. Here it removes the
// audience "old" (the operator withdrawing it): a token for "old" must stop
// passing. The watcher used to record the hash of the file as it was after
// the failed load as "tried", so the complete content was never loaded
// until the next SIGHUP or edit, while a failed reload had been counted.
func TestWatchAppliesContentWrittenDuringAFailedLoad(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	doc := func(auds string) []byte {
		return []byte("listen: 127.0.0.1:0\nissuers:\n  - issuer: https://a.test/\n    jwks_file: jwks.json\n    audiences: [" + auds + "]\n")
	}
	cfg := writeFile(t, dir, "cfg.yaml", doc("api, old"))
	env := func(string) (string, bool) { return "", false }
	plan, err := config.Load(cfg, config.Overrides{}, env)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(plan, service.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()

	complete := doc("api")
	var loads atomic.Int64
	load := func() (*config.Plan, error) {
		p, err := config.Load(cfg, config.Overrides{}, env)
		if loads.Add(1) == 1 {
			// The writer finishes while this load fails on its first half.
			if err == nil {
				t.Errorf("the half-written file loaded")
			}
			if werr := os.WriteFile(filepath.Join(dir, "cfg.yaml"), complete, 0o600); werr != nil {
				t.Error(werr)
			}
		}
		return p, err
	}
	// The first half of the write: truncated mid-document.
	half := complete[:len(complete)-len("    audiences: [api]\n")+len("    audiences: [a")]
	if err := os.WriteFile(cfg, half, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); watch(ctx, svc, cfg, load, nil, slog.New(slog.DiscardHandler)) }()
	defer func() { cancel(); <-done }()

	tok := mintRS256(claimsAt("https://a.test/", "old", time.Now()))
	status := func() int {
		r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		svc.Handler().ServeHTTP(w, r)
		return w.Code
	}
	// Bounded wait: the watcher polls every second.
	deadline := time.Now().Add(30 * time.Second)
	for svc.Plan().Hash != config.Hash(complete) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s (%d loads): the complete file was never loaded; running %s, file %s; a token for the removed audience answers %d",
				loads.Load(), svc.Plan().Hash, config.Hash(complete), status())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := status(); got != http.StatusUnauthorized {
		t.Errorf("a token for the removed audience: %d, want 401", got)
	}
	if strings.Contains(string(half), "old") {
		t.Fatal("test bug: the half still names the removed audience")
	}
}
