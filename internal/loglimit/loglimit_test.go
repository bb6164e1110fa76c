package loglimit

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testlog"
)

// summaries returns the counts of the summary lines in buf, in order.
func summaries(t *testing.T, buf *testlog.Buffer) []int {
	t.Helper()
	var got []int
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec struct {
			Msg   string `json:"msg"`
			Count int    `json:"count"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Msg == "token rejections not logged" {
			got = append(got, rec.Count)
		}
	}
	return got
}

func TestLimiter(t *testing.T) {
	tests := []struct {
		name        string
		perSecond   int
		calls       []time.Duration // offsets from the start
		wantAllowed int
		wantSummary []int // counts of the "not logged" lines, in order
	}{
		{name: "under-the-bound", perSecond: 3, calls: []time.Duration{0, 0, 0}, wantAllowed: 3},
		{name: "over-the-bound-then-summary", perSecond: 2, calls: []time.Duration{0, 0, 0, 0, 0, time.Second}, wantAllowed: 3, wantSummary: []int{3}},
		{name: "summary-without-another-line", perSecond: 2, calls: []time.Duration{0, 0, 0, 10 * time.Millisecond}, wantAllowed: 2, wantSummary: []int{2}},
		{name: "window-restarts", perSecond: 1, calls: []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 1600 * time.Millisecond, 3 * time.Second}, wantAllowed: 3, wantSummary: []int{1, 1}},
		{name: "clock-goes-back", perSecond: 1, calls: []time.Duration{2 * time.Minute, 0}, wantAllowed: 2},
		{name: "late-reading-counts-in-the-window", perSecond: 1, calls: []time.Duration{time.Second, 0}, wantAllowed: 1, wantSummary: []int{1}},
		{name: "no-limit", perSecond: -1, calls: []time.Duration{0, 0, 0, 0}, wantAllowed: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				buf := new(testlog.Buffer)
				log := slog.New(slog.NewJSONHandler(buf, nil))
				l := New(tt.perSecond, "token rejections not logged")
				start := time.Now()
				allowed := 0
				for _, off := range tt.calls {
					if d := time.Until(start.Add(off)); d > 0 {
						time.Sleep(d)
					}
					if l.Allow(context.Background(), log, slog.LevelInfo, start.Add(off)) {
						allowed++
					}
				}
				time.Sleep(2 * time.Second) // every window closes
				synctest.Wait()
				if allowed != tt.wantAllowed {
					t.Errorf("allowed %d lines, want %d", allowed, tt.wantAllowed)
				}
				if got := summaries(t, buf); !equalInts(got, tt.wantSummary) {
					t.Errorf("summaries = %v, want %v", got, tt.wantSummary)
				}
			})
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLogLimiterSummaryOnTime: the summary of a window's dropped lines is
// written when the window closes, one second after it opened, although no
// line follows; not before; at the level of the most severe line dropped.
func TestLimiterSummaryOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		buf := new(testlog.Buffer)
		log := slog.New(slog.NewJSONHandler(buf, nil))
		l := New(1, "token rejections not logged")
		ctx := context.Background()
		start := time.Now()
		l.Allow(ctx, log, slog.LevelInfo, start)
		l.Allow(ctx, log, slog.LevelInfo, start)
		l.Allow(ctx, log, slog.LevelWarn, start)
		time.Sleep(time.Second - time.Millisecond)
		synctest.Wait()
		if got := summaries(t, buf); len(got) != 0 {
			t.Fatalf("summaries %v before the window closed, want none", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := summaries(t, buf); !equalInts(got, []int{2}) {
			t.Fatalf("summaries %v when the window closed, want [2]", got)
		}
		if !strings.Contains(buf.String(), `"level":"WARN"`) {
			t.Errorf("summary %q, want it at WARN (a warning was dropped)", buf.String())
		}
		// The next line opens a new window: nothing is summarized twice.
		l.Allow(ctx, log, slog.LevelInfo, time.Now())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := summaries(t, buf); !equalInts(got, []int{2}) {
			t.Errorf("summaries %v, want [2] once", got)
		}
	})
}

func TestNewDefault(t *testing.T) {
	if l := New(0, "x"); l == nil || l.perSecond != DefaultRate {
		t.Errorf("New(0) = %+v, want the default rate %d", l, DefaultRate)
	}
}
