package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/loglimit"
)

// TestRedisClientLinesAreStructuredAndBounded: go-redis's own lines (here
// a Sentinel that cannot be reached, as go-redis words it) reach the log
// as JSON warn lines "redis client" with go-redis's words as text, not as
// unstructured text on stderr, and at
// most loglimit.DefaultRate of them a second, then their count.
func TestRedisClientLinesAreStructuredAndBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		l := newRedisLog(slog.NewJSONHandler(&out, nil))
		const sent = 3 * loglimit.DefaultRate
		for range sent {
			l.Printf(context.Background(), "sentinel: GetMasterAddrByName master=%q failed: %s\n", "jv", "dial tcp 127.0.0.1:1: connect: connection refused")
		}
		time.Sleep(2 * time.Second) // the window closes; its summary is written
		synctest.Wait()

		var lines, summaries, dropped int
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("a line is not JSON: %q", line)
			}
			if rec["level"] != "WARN" {
				t.Errorf("level = %v, want WARN: %s", rec["level"], line)
			}
			switch rec["msg"] {
			case "redis client lines not logged":
				summaries++
				n, _ := rec["count"].(float64)
				dropped += int(n)
			case "redis client":
				lines++
				if want := `sentinel: GetMasterAddrByName master="jv" failed: dial tcp 127.0.0.1:1: connect: connection refused`; rec["text"] != want {
					t.Errorf("text = %v, want %q", rec["text"], want)
				}
			default:
				t.Errorf("unexpected line %s", line)
			}
		}
		if lines != loglimit.DefaultRate || summaries != 1 || lines+dropped != sent {
			t.Errorf("%d lines, %d summaries counting %d dropped; want %d lines and one summary of the other %d",
				lines, summaries, dropped, loglimit.DefaultRate, sent-loglimit.DefaultRate)
		}
	})
}
