//go:build unix

package revoke

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/fileread/fifotest"
)

// The log that is not a regular file (a named pipe, a symlink to a device
// or a terminal) is refused with its path at start: os.ReadFile of a pipe
// waited in open(2) for a writer, so the service never started and never
// said why.
func TestMemoryLogThatIsNotAFileIsRefused(t *testing.T) {
	for name, make := range map[string]func(t *testing.T, p string){
		"fifo": func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatalf("mkfifo: %v", err)
			}
			t.Cleanup(func() { // what a failing run left blocked in open(2) returns
				for range 4 {
					if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						w.Close()
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		},
		"directory": func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, MemoryFile)
			make(t, p)
			fifotest.Within(t, "OpenMemory", func() {
				m, err := OpenMemory(MemoryOptions{Dir: dir, Retention: time.Hour, Now: func() time.Time { return t0 }})
				if err == nil {
					m.Close()
					t.Errorf("OpenMemory(a log that is a %s) = nil error, want a refusal", name)
					return
				}
				if !strings.Contains(err.Error(), p) {
					t.Errorf("OpenMemory() = %v, want the log's path named", err)
				}
			})
		})
	}
}
