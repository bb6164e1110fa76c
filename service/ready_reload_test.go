package service

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// doneWatch is a context that reports when its Done channel is first
// asked for: a caller about to block on it.
type doneWatch struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *doneWatch) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

// TestReadyFollowsReload: Ready waits for the current generation, across a
// reload that replaces an issuer without keys yet (its key file not
// mounted yet; the operator points it at the file that is there). The
// replaced fetcher retires at the swap; Ready, waiting on it, returned
// jwks.ErrClosed although the service became ready: a program that gates
// its own readiness (or its start) on Ready failed.
func TestReadyFollowsReload(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "there.json"), testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := func(file string) string {
		return "issuers:\n  - issuer: https://a.example/\n    jwks_file: " + file + "\n    audiences: [api]\n"
	}
	s, err := New(parsePlan(t, dir, doc("missing.json")), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := &doneWatch{Context: ctx, waiting: make(chan struct{})}
	ready := make(chan error, 1)
	go func() { ready <- s.Ready(w) }()
	<-w.waiting // Ready waits on the first generation's fetcher

	mustReload(t, s, ctx, parsePlan(t, dir, doc("there.json")))
	if ok, notReady := s.Server().Ready(); !ok {
		t.Fatalf("after the reload: not ready %v", notReady)
	}
	if err := <-ready; err != nil {
		t.Errorf("Ready() = %v across a reload to a ready generation, want nil", err)
	}
}
