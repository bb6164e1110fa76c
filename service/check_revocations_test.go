package service

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/jwksverify/jwksverify/revoke"
)

// TestCheckReadsTheRevocationLog: Check's nil promises that New builds the
// service, and New reads the memory revocation store's log in state_dir
// (a line that does not decode fails it). Check did not look at the log:
// `jwksverify check` passed a configuration whose service then would not
// start. Check reads the log as New does, without the store's lock (a
// running instance holds it) and without rewriting it.
func TestCheckReadsTheRevocationLog(t *testing.T) {
	for _, tt := range []struct {
		name, log string
		ok        bool
	}{
		{"absent", "", true},
		{"entries", `{"op":"delete","id":"x"}` + "\n", true},
		{"cut-short-last-line", `{"op":"delete","id":"x"}` + "\n" + `{"op":"ad`, true},
		{"line-that-does-not-decode", "not json\n", false},
		{"unknown-record", `{"op":"lift","id":"x"}` + "\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			logFile := filepath.Join(dir, revoke.MemoryFile)
			if tt.log != "" {
				if err := os.WriteFile(logFile, []byte(tt.log), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			plan := memoryRevocationPlan(t, dir)
			o := Options{Logger: slog.New(slog.DiscardHandler)}
			checkErr := Check(plan, o)
			after, _ := os.ReadFile(logFile)
			if string(after) != tt.log {
				t.Errorf("Check() changed the log to %q", after)
			}
			s, newErr := New(plan, o)
			if s != nil {
				s.Close()
			}
			if (newErr == nil) != tt.ok {
				t.Fatalf("premise: New() = %v, want ok %v", newErr, tt.ok)
			}
			if (checkErr == nil) != (newErr == nil) {
				t.Errorf("Check() = %v, but New() = %v", checkErr, newErr)
			}
		})
	}
}
