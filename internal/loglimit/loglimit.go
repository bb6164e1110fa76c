// Package loglimit bounds how many log lines of one kind a process writes
// per second, counting the rest and logging their count: a flood of bad
// requests must not also be a flood of log lines. The server's rejection
// lines and the revocation signals' refusals share it.
package loglimit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultRate is the default bound on the lines of one kind per second.
const DefaultRate = 20

// maxLag is how far before the current window a reading may be and still
// count in it. Callers read their clock before they ask (a decision, when
// it starts), so concurrent callers ask out of the order of their
// readings, and one that waited (an introspection call, an unknown-kid
// refresh) asks with an old reading: opening a window for it, and another
// for the next current reading, let a flood of late and current lines
// interleaved through whole. A reading further back is a clock set back.
const maxLag = time.Minute

// Limiter bounds how many lines of one kind are written per second, so a
// flood of bad tokens is not also a flood of log lines. Lines past the bound
// are counted, and the count is logged once, as summary, when their
// one-second window closes: by a timer (time.AfterFunc, armed by the first
// line dropped in a window), so that it appears on time even when no other
// line follows, or by the next line if that comes first. The counts are
// always visible in the metrics, which are never sampled. It is safe for
// concurrent use; a nil *Limiter allows every line. It owns no goroutine:
// a pending timer fires once, within a second, and needs no Close.
type Limiter struct {
	perSecond int
	summary   string // the summary line's message

	mu         sync.Mutex
	window     time.Time // start of the current one-second window
	used       int       // lines written in the window
	suppressed int       // lines dropped in the window and not yet summarized
	level      slog.Level
	log        *slog.Logger
	armed      bool // a timer will summarize the window
}

// New returns a limiter for perSecond lines a second whose summary line
// says summary: zero means [DefaultRate], negative means no limit (nil).
func New(perSecond int, summary string) *Limiter {
	switch {
	case perSecond < 0:
		return nil
	case perSecond == 0:
		perSecond = DefaultRate
	}
	return &Limiter{perSecond: perSecond, summary: summary}
}

// Allow reports whether one more line may be written at now (the caller's
// reading of its clock), at level to log. When a window
// closes with dropped lines not yet summarized, it logs their count first.
// A reading before the current window (up to maxLag) counts in it: windows
// only move forward.
func (l *Limiter) Allow(ctx context.Context, log *slog.Logger, level slog.Level, now time.Time) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	var dropped int
	var droppedLevel slog.Level
	if since := now.Sub(l.window); since >= time.Second || since < -maxLag {
		dropped, droppedLevel = l.suppressed, l.level
		l.window, l.used, l.suppressed, l.armed = now, 0, 0, false
	}
	ok := l.used < l.perSecond
	if ok {
		l.used++
	} else {
		if l.suppressed == 0 || level > l.level {
			l.level = level // the summary is at the level of the most severe line dropped
		}
		l.suppressed++
		l.log = log
		if !l.armed {
			l.armed = true
			w := l.window
			delay := min(max(w.Add(time.Second).Sub(now), 0), time.Second)
			time.AfterFunc(delay, func() { l.flush(w) })
		}
	}
	l.mu.Unlock()
	if dropped > 0 {
		l.write(ctx, log, droppedLevel, dropped)
	}
	return ok
}

// flush writes the summary of window w, unless a later line has already
// closed it (and written it).
func (l *Limiter) flush(w time.Time) {
	l.mu.Lock()
	if !l.window.Equal(w) || l.suppressed == 0 {
		l.mu.Unlock()
		return
	}
	n, level, log := l.suppressed, l.level, l.log
	// A late reading may still drop a line of w: it arms a timer again.
	l.suppressed, l.armed = 0, false
	l.mu.Unlock()
	l.write(context.Background(), log, level, n)
}

func (l *Limiter) write(ctx context.Context, log *slog.Logger, level slog.Level, n int) {
	log.LogAttrs(ctx, level, l.summary,
		slog.Int("count", n), slog.String("reason", "rate limit"), slog.Int("per_second", l.perSecond))
}
