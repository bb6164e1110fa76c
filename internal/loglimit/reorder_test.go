package loglimit

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testlog"
)

// TestLimiterBoundsReorderedReadings: the callers read the clock before
// they ask (the server, when a decision starts), so concurrent callers ask
// out of the order of their readings, and one that waited (an
// introspection call, an unknown-kid refresh) asks with a reading a second
// or more old. Such a reading opened a new window, and the next current one
// another: a flood interleaving late and current rejections had every line
// written. At most perSecond lines are written in any window, and windows
// only move forward.
func TestLimiterBoundsReorderedReadings(t *testing.T) {
	tests := []struct {
		name string
		lag  time.Duration // how far behind every other caller's reading is
	}{
		{name: "jitter", lag: 20 * time.Millisecond},
		{name: "slow-calls", lag: 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const perSecond, span = 5, 4 * time.Second
			log := slog.New(slog.NewJSONHandler(new(testlog.Buffer), nil))
			l := New(perSecond, "token rejections not logged")
			start := time.Now().Round(0) // an injected clock's readings: no monotonic reading
			allowed := 0
			for off := time.Duration(0); off < span; off += 10 * time.Millisecond {
				for _, lag := range []time.Duration{0, tt.lag} {
					if off < lag {
						continue
					}
					if l.Allow(context.Background(), log, slog.LevelInfo, start.Add(off-lag)) {
						allowed++
					}
				}
			}
			// The readings span at most span+lag: that many windows, and one.
			if limit := perSecond * int((span+tt.lag)/time.Second+2); allowed > limit {
				t.Errorf("%d lines allowed over %s of readings, want at most %d (%d a second)", allowed, span+tt.lag, limit, perSecond)
			}
		})
	}
}

// TestLimiterSummarizesLateDrops: a line dropped in a window whose summary
// was already written (a caller that asks with a reading taken before the
// window closed) is summarized too, when no other line follows. It was
// counted and never written: the summary timer stayed marked as armed.
func TestLimiterSummarizesLateDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		buf := new(testlog.Buffer)
		log := slog.New(slog.NewJSONHandler(buf, nil))
		l := New(1, "token rejections not logged")
		ctx := context.Background()
		start := time.Now()
		l.Allow(ctx, log, slog.LevelInfo, start)
		l.Allow(ctx, log, slog.LevelInfo, start) // dropped: the window's timer is armed
		time.Sleep(1100 * time.Millisecond)
		synctest.Wait()
		if got := summaries(t, buf); !equalInts(got, []int{1}) {
			t.Fatalf("summaries %v when the window closed, want [1]", got)
		}
		// A decision that started in the window asks now, and is dropped.
		if l.Allow(ctx, log, slog.LevelInfo, start.Add(500*time.Millisecond)) {
			t.Fatal("a second line allowed in a window of one")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := summaries(t, buf); !equalInts(got, []int{1, 1}) {
			t.Errorf("summaries %v, want [1 1]: the late drop is counted and never written", got)
		}
	})
}
