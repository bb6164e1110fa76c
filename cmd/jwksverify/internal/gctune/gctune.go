// Package gctune keeps a serving process's garbage collector from running
// dozens of times a second while its live heap is small.
//
// Go's collector starts a cycle when the heap grows by GOGC percent of the
// live heap, and never below 4 MB. jwksverify's live heap is about 1 MB at
// start (mostly protobuf descriptors) and a cached request still leaves
// about 3 KB of garbage in net/http, so at 40 000 requests a second the
// default collector runs about every 15 ms and marks the same megabyte each time:
// about 2.9 µs of a 21 µs request. A cycle costs the same whether the heap
// grew by 3 MB or by 32 MB, so letting it grow by a fixed headroom first
// removes nearly all of that work for a bounded amount of memory.
//
// [Start] sets the GC percent after every cycle so that the next one starts
// when the heap has grown by max(live heap, headroom): Go's default (GOGC=100)
// once the live heap is larger than the headroom, which is where a full token
// cache puts it, and live + headroom below that. It does nothing when the
// environment sets GOGC: the operator's choice wins. A memory limit
// (GOMEMLIMIT) still applies: the collector runs earlier to stay under it.
package gctune

import (
	"cmp"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultHeadroom is the heap growth, in bytes, a small live heap may have
// between two cycles.
const DefaultHeadroom = 32 << 20

// minGoal is Go's smallest heap goal at GOGC=100 (the runtime's
// defaultHeapMinimum); it scales with the GC percent.
const minGoal = 4 << 20

// Percent returns the GC percent that lets a heap whose live part is live
// bytes grow by max(live, headroom) before the next cycle. The runtime's
// heap minimum (4 MB × percent / 100) is kept at or below that goal.
func Percent(live, headroom uint64) int {
	live = max(live, 1)
	goal := live + max(live, headroom)
	p := float64(goal-live) / float64(live) * 100         // live × (1 + p/100) = goal
	p = min(p, float64(goal)/minGoal*100)                 // the heap minimum ≤ goal
	return int(math.Max(100, math.Min(p, math.MaxInt32))) // never below Go's default
}

// Tuner adjusts the GC percent after every cycle. Stop ends it.
type Tuner struct {
	headroom uint64
	set      func(int) int // debug.SetGCPercent
	live     func() uint64

	mu      sync.Mutex
	stopped bool
	percent int
}

// Start tunes the process's collector with headroom bytes (0:
// DefaultHeadroom) unless getenv reports GOGC set, in which case it returns
// nil. Call it once per process.
func Start(headroom uint64, getenv func(string) (string, bool)) *Tuner {
	if _, ok := getenv("GOGC"); ok {
		return nil
	}
	t := &Tuner{headroom: cmp.Or(headroom, DefaultHeadroom), set: debug.SetGCPercent, live: liveHeap}
	t.adjust()
	t.arm()
	return t
}

// Stop restores the GC percent the process had before Start (Go's default)
// and ends the tuning. It is safe on a nil Tuner.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		t.set(100)
	}
}

// Percent returns the GC percent the tuner last set.
func (t *Tuner) Percent() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// adjust sets the percent for the live heap the last cycle left. It skips
// changes under a tenth: the live heap wanders a little every cycle.
func (t *Tuner) adjust() bool {
	p := Percent(t.live(), t.headroom)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	if d := p - t.percent; t.percent == 0 || d*10 > t.percent || -d*10 > t.percent {
		t.set(p)
		t.percent = p
	}
	return true
}

// sentinel is garbage as soon as it is made: its finalizer runs after the
// next cycle. It holds a pointer and is larger than 16 bytes so that it is
// not a tiny allocation, whose finalizer may never run.
type sentinel struct {
	t *Tuner
	_ [4]uintptr
}

// arm makes the sentinel of the next cycle.
func (t *Tuner) arm() {
	s := &sentinel{t: t}
	runtime.SetFinalizer(s, func(s *sentinel) {
		if s.t.adjust() {
			s.t.arm()
		}
	})
}

// liveHeap is the live heap the last cycle marked (0 before the first).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
