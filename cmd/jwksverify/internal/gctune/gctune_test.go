package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		live, headroom uint64
		want           int
	}{
		{0, 32 * mb, 800},        // no cycle yet: a 32 MB goal (the heap minimum at 800%)
		{1 * mb, 32 * mb, 825},   // goal 33 MB: the heap minimum binds
		{4 * mb, 32 * mb, 800},   // goal 36 MB = 4 × 9
		{16 * mb, 32 * mb, 200},  // goal 48 MB
		{32 * mb, 32 * mb, 100},  // goal 64 MB: Go's default from here on
		{200 * mb, 32 * mb, 100}, // a full token cache: unchanged
		{1 * mb, 4 * mb, 125},    // goal 5 MB
		{1 * mb, 1, 100},         // a tiny headroom is Go's default
		{1, 1 << 62, 2147483647}, // clamped
	}
	for _, tt := range tests {
		if got := Percent(tt.live, tt.headroom); got != tt.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tt.live, tt.headroom, got, tt.want)
		}
		// The goal the percent gives is never above live + max(live, headroom).
		live := float64(max(tt.live, 1))
		goal := max(float64(minGoal)*float64(tt.want)/100, live*(1+float64(tt.want)/100))
		if limit := live + max(live, float64(tt.headroom)); tt.want < 2147483647 && tt.want > 100 && goal > limit*1.001 {
			t.Errorf("Percent(%d, %d): goal %.0f above %.0f", tt.live, tt.headroom, goal, limit)
		}
	}
}

// fake is a Tuner with an injected live heap and a recorded percent.
func fake(live *uint64, got *[]int) *Tuner {
	return &Tuner{headroom: 32 << 20, live: func() uint64 { return *live },
		set: func(p int) int { *got = append(*got, p); return 100 }}
}

func TestAdjustSkipsSmallChanges(t *testing.T) {
	var live uint64 = 1 << 20
	var got []int
	tu := fake(&live, &got)
	tu.adjust() // 825
	live = 1<<20 + 1<<16
	tu.adjust() // 33.06 MB / 4 MB: 826, within a tenth
	live = 16 << 20
	tu.adjust() // 200
	tu.Stop()
	live = 1 << 20
	if tu.adjust() {
		t.Error("adjust after Stop reported true")
	}
	want := []int{825, 200, 100}
	if len(got) != len(want) {
		t.Fatalf("set calls = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("set calls = %v, want %v", got, want)
		}
	}
	if p := tu.Percent(); p != 200 {
		t.Errorf("Percent() = %d, want 200 (the last set by tuning)", p)
	}
}

func TestStartRespectsGOGC(t *testing.T) {
	env := func(k string) (string, bool) { return "100", k == "GOGC" }
	if tu := Start(0, env); tu != nil {
		tu.Stop()
		t.Fatal("Start with GOGC set returned a tuner")
	}
	var nilTuner *Tuner
	nilTuner.Stop() // safe
}

// TestStartTunesEveryCycle runs the real tuner: the percent it sets holds
// after Start and is set again after a collection.
func TestStartTunesEveryCycle(t *testing.T) {
	tu := Start(0, func(string) (string, bool) { return "", false })
	defer tu.Stop()
	if p := current(); p != tu.Percent() || p < 100 {
		t.Fatalf("GC percent = %d, tuner's = %d", p, tu.Percent())
	}
	debug.SetGCPercent(100) // as if someone reset it
	tu.mu.Lock()
	tu.percent = 100 // and the tuner knew: the next cycle's goal is far off
	tu.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for tu.Percent() == 100 {
		if time.Now().After(deadline) {
			t.Fatal("no adjustment 10 s after collections")
		}
		runtime.GC() // the sentinel's finalizer runs after a cycle
		time.Sleep(time.Millisecond)
	}
	if p := current(); p != tu.Percent() {
		t.Fatalf("GC percent = %d after the cycle, tuner's = %d", p, tu.Percent())
	}
	tu.Stop()
	if p := current(); p != 100 {
		t.Errorf("GC percent = %d after Stop, want 100", p)
	}
}

func current() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
