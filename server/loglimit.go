package server

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultRejectionLogRate is the default bound on "token rejected" log lines
// per second.
const DefaultRejectionLogRate = 20

// logLimiter bounds how many rejection lines are written per second, so a
// flood of bad tokens is not also a flood of log lines. Lines past the bound
// are counted, and the count is logged once when the next second opens (and
// is always visible in the verify outcome metrics, which are never sampled).
// It is safe for concurrent use; a nil *logLimiter allows every line.
type logLimiter struct {
	perSecond int

	mu         sync.Mutex
	window     time.Time // start of the current one-second window
	used       int       // lines written in the window
	suppressed int       // lines dropped in the window
}

// newLogLimiter returns a limiter for perSecond lines a second: zero means
// [DefaultRejectionLogRate], negative means no limit (nil).
func newLogLimiter(perSecond int) *logLimiter {
	switch {
	case perSecond < 0:
		return nil
	case perSecond == 0:
		perSecond = DefaultRejectionLogRate
	}
	return &logLimiter{perSecond: perSecond}
}

// allow reports whether one more line may be written at now (the
// decision's reading of the server's clock). When a window closes with
// dropped lines, it logs their count to log at level first.
func (l *logLimiter) allow(ctx context.Context, log *slog.Logger, level slog.Level, now time.Time) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	var dropped int
	if now.Sub(l.window) >= time.Second || now.Before(l.window) {
		dropped = l.suppressed
		l.window, l.used, l.suppressed = now, 0, 0
	}
	ok := l.used < l.perSecond
	if ok {
		l.used++
	} else {
		l.suppressed++
	}
	l.mu.Unlock()
	if dropped > 0 {
		log.LogAttrs(ctx, level, "token rejections not logged",
			slog.Int("count", dropped), slog.String("reason", "rate limit"), slog.Int("per_second", l.perSecond))
	}
	return ok
}
