//go:build unix

package jwks

import (
	"log/slog"
	"os"
	"syscall"
	"testing"

	"github.com/jwksverify/jwksverify/internal/fileread/fifotest"
	"github.com/jwksverify/jwksverify/internal/redact"
)

// A state file that is not a regular file is refused before it is read,
// as a jwks_file is: a named pipe that some process holds open without
// writing (or a symlink to a terminal) waited for data in New, outside any
// timeout, so the start and every reload that builds the issuer's fetcher
// (under the reload lock) hung for good.
func TestStateFileFIFONeverBlocks(t *testing.T) {
	const iss = "https://idp.example/"
	const url = "https://idp.example/jwks"
	dir := t.TempDir()
	p := statePath(dir, iss, redact.String(url))
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	// A writer that never writes: O_RDWR opens a pipe without waiting.
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fifotest.Within(t, "New with a state file that is a named pipe", func() {
		f, err := New(Options{Issuer: iss, URL: url, StateDir: dir, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Errorf("New() = %v", err)
			return
		}
		f.Close()
	})
	w.Close() // lets a blocked read return, so the test ends
}
