//go:build unix

package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/service"
)

// A configuration given as a pipe (--config <(…), /dev/stdin) was read
// whole at start; its writer is gone, and every later poll reads it as
// empty. The watcher took that for a change: one second after every
// start it tried the empty "file", logged "configuration reload failed"
// and counted a failed reload that no one asked for (an alert on
// jwksverify_config_reloads_total{result="error"} fired at each
// restart). Only a regular file is polled; SIGHUP still reloads a pipe.
func TestWatchDoesNotPollAPipe(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte("listen: 127.0.0.1:0\nissuers:\n  - issuer: https://a.test/\n    jwks_file: "+filepath.Join(dir, "jwks.json")+"\n    audiences: [api]\n"))
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
	pipe := filepath.Join(dir, "cfg.pipe") // its content was read at start; no writer now
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	var loads atomic.Int64
	load := func() (*config.Plan, error) {
		loads.Add(1)
		return config.Load(pipe, config.Overrides{}, env)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); watch(ctx, svc, pipe, load, nil, slog.New(slog.DiscardHandler)) }()
	time.Sleep(3 * configPollInterval) // a poll that took the pipe for a change has loaded by then
	cancel()
	<-done
	if n := loads.Load(); n != 0 {
		t.Errorf("the watcher loaded the configuration %d times from a pipe nobody wrote to again: a failed reload at every start", n)
	}
}
