package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLogLimiter(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		perSecond   int
		calls       []time.Duration // offsets from t0
		wantAllowed int
		wantSummary []int // counts of the "not logged" lines, in order
	}{
		{name: "under-the-bound", perSecond: 3, calls: []time.Duration{0, 0, 0}, wantAllowed: 3},
		{name: "over-the-bound-then-summary", perSecond: 2, calls: []time.Duration{0, 0, 0, 0, 0, time.Second}, wantAllowed: 3, wantSummary: []int{3}},
		{name: "window-restarts", perSecond: 1, calls: []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 1600 * time.Millisecond, 3 * time.Second}, wantAllowed: 3, wantSummary: []int{1, 1}},
		{name: "clock-goes-back", perSecond: 1, calls: []time.Duration{time.Second, 0}, wantAllowed: 2},
		{name: "no-limit", perSecond: -1, calls: []time.Duration{0, 0, 0, 0}, wantAllowed: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, nil))
			l := newLogLimiter(tt.perSecond)
			allowed := 0
			for _, off := range tt.calls {
				if l.allow(context.Background(), log, slog.LevelInfo, t0.Add(off)) {
					allowed++
				}
			}
			if allowed != tt.wantAllowed {
				t.Errorf("allowed %d lines, want %d", allowed, tt.wantAllowed)
			}
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
			if len(got) != len(tt.wantSummary) {
				t.Fatalf("summaries = %v, want %v", got, tt.wantSummary)
			}
			for i := range got {
				if got[i] != tt.wantSummary[i] {
					t.Errorf("summaries = %v, want %v", got, tt.wantSummary)
				}
			}
		})
	}
}

func TestNewLogLimiterDefault(t *testing.T) {
	if l := newLogLimiter(0); l == nil || l.perSecond != DefaultRejectionLogRate {
		t.Errorf("newLogLimiter(0) = %+v, want the default rate %d", l, DefaultRejectionLogRate)
	}
}
