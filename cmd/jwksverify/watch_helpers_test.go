package main

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/service"
)

// writeAtomic writes b to path as a Kubernetes ConfigMap or Secret update
// does: a temporary file renamed over it.
func writeAtomic(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// watchedService loads the configuration file cfg, serves it with a
// service and watches the file as serve does (watch), until the test ends.
// Its log lines are in the buffer returned.
func watchedService(t *testing.T, cfg string) (*service.Service, *testlog.Buffer) {
	t.Helper()
	load := func() (*config.Plan, error) {
		return config.Load(cfg, config.Overrides{}, func(string) (string, bool) { return "", false })
	}
	plan, err := load()
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	svc, err := service.New(plan, service.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); watch(ctx, svc, cfg, load, nil, logger) }()
	t.Cleanup(func() {
		cancel()
		<-done
		svc.Close()
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	return svc, logs
}

// watchWait is how long a test waits for the watch to apply a change: it
// polls every second, and a busy machine may take a while to load.
const watchWait = 30 * time.Second

// waitFor polls cond until it holds, for at most watchWait; it reports
// whether it did, and fails the test with what when it did not.
func waitFor(t *testing.T, what string, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(watchWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("after %s: %s", watchWait, what)
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
