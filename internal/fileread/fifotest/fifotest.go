//go:build unix

// Package fifotest makes named pipes for the tests of readers that must not
// block on one.
package fifotest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Make makes a named pipe called name in a temporary directory and returns
// its path. At the end of the test it opens the pipe's other end a few
// times, so that whatever a failing run left blocked in open(2) returns
// (and goleak sees no goroutine stuck there).
func Make(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		for range 4 {
			if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return p
}

// Within fails t unless f returns within 10 seconds: a read that waits
// for a writer never would.
func Within(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still blocked after 10s", what)
	}
}
