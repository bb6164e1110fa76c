package revoke

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMemoryRefusesBadOptionsAndLogs: a retention of zero (every entry
// expired at once) and a log whose add record has no entry are refused at
// open, not taken (or a panic).
func TestMemoryRefusesBadOptionsAndLogs(t *testing.T) {
	t.Run("zero-retention", func(t *testing.T) {
		if m, err := OpenMemory(MemoryOptions{Dir: t.TempDir()}); err == nil {
			m.Close()
			t.Error("OpenMemory(Retention: 0) = nil, want an error")
		}
	})
	t.Run("add-record-without-entry", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, MemoryFile), []byte(`{"op":"add"}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if m, err := OpenMemory(MemoryOptions{Dir: dir, Retention: time.Hour}); err == nil {
			m.Close()
			t.Error("OpenMemory() of a log with an add record without its entry = nil, want an error")
		}
	})
}
