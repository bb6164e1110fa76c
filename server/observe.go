package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/jwksverify/jwksverify/internal/loglimit"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/verify"
)

// This file records a decision: the one place [Server.Decide] emits
// metrics and the log line (introspection clients refused before any
// decision are introspect.go's).

// observe records d, decided for c at now: the token's verdict
// ([Metrics.Decided]: not for an anonymous request, which has none), the
// binding checks (bc, [BindingMetrics]), the policy's decision
// ([PolicyMetrics], when one ran), and one log line for a rejected or
// forbidden call (rate-limited; never the token, whose segments the
// message is checked against).
func (s *Server) observe(ctx context.Context, c *Call, d *Decision, st *policyStage, bc *bindCounts, now time.Time, token string) {
	if s.bindingMetrics != nil {
		for i := range bc.n {
			s.bindingMetrics.BindingChecked(bc.issuer, bc.kind[i], bc.outcome[i])
		}
	}
	if s.metrics != nil && !d.Anonymous {
		class := d.Class
		if d.Allowed() || d.Status == http.StatusForbidden {
			class = ClassValid // the token was valid; the policy's refusal is counted below
		}
		s.metrics.Decided(c.Endpoint, d.Issuer, class, s.elapsed(now))
	}
	if st.run && s.policyMetrics != nil {
		class := d.Class
		switch {
		case d.Anonymous:
			class = ClassAnonymous
		case d.Allowed():
			class = ClassValid
		}
		s.policyMetrics.Authorized(st.label, class)
	}
	switch {
	case d.Allowed():
	case d.Status == http.StatusForbidden && d.Requirement != "":
		s.logForbidden(ctx, c, d, st, now)
	default:
		s.logRejected(ctx, c, d, now, token)
	}
}

// limitRejections bounds the rejection lines to perSecond a second at info
// level, and as many at warn and error level (a flood of one kind must not
// hide the other): every front end a client reaches logs through them.
func (s *Server) limitRejections(perSecond int) {
	s.logRate = loglimit.New(perSecond, "token rejections not logged")
	s.logRateWarn = loglimit.New(perSecond, "token rejections not logged")
}

// rejectionLimiter is the limiter of rejection lines at level.
func (s *Server) rejectionLimiter(level slog.Level) *loglimit.Limiter {
	if level >= slog.LevelWarn {
		return s.logRateWarn
	}
	return s.logRate
}

// logRejected logs a rejected token (info), one that could not be decided
// (warn), or a fault of no class (error).
func (s *Server) logRejected(ctx context.Context, c *Call, d *Decision, now time.Time, token string) {
	level := slog.LevelInfo
	if d.Status == http.StatusServiceUnavailable {
		level = slog.LevelWarn
		if !errors.Is(d.Err, verify.ErrUnavailable) {
			level = slog.LevelError // a fault, not a verdict (StatusOf)
		}
	}
	if !s.log.Enabled(ctx, level) || !s.rejectionLimiter(level).Allow(ctx, s.log, level, now) {
		return
	}
	var kid, hint string
	if ve := verifyError(d.Err); ve != nil {
		kid, hint = ve.Kid, ve.Hint
	}
	attrs := []slog.Attr{
		slog.String("endpoint", c.Endpoint),
		slog.String("issuer", d.Issuer),
		slog.String("kid", truncate(kid, maxLogField)),
		slog.String("class", d.Class),
		slog.String("detail", safeMessage(d.Err, d.Class, token)),
	}
	if hint != "" {
		// Names configuration (audiences, a near-miss issuer): the log's,
		// never the answer's.
		attrs = append(attrs, slog.String("hint", safeMessage(errors.New(hint), d.Class, token)))
	}
	s.log.LogAttrs(ctx, level, "token rejected", attrs...)
}

// logForbidden logs a valid token a policy refused: info, or warn for an
// expression that failed at run time (a configuration problem).
func (s *Server) logForbidden(ctx context.Context, c *Call, d *Decision, st *policyStage, now time.Time) {
	level := slog.LevelInfo
	var dn *policy.Denial
	if errors.As(d.Err, &dn) && dn.Err != nil {
		level = slog.LevelWarn
	}
	if !s.log.Enabled(ctx, level) || !s.rejectionLimiter(level).Allow(ctx, s.log, level, now) {
		return
	}
	s.log.LogAttrs(ctx, level, "request forbidden",
		slog.String("endpoint", c.Endpoint),
		slog.String("issuer", d.Issuer),
		slog.String("policy", st.label),
		slog.String("requirement", d.Requirement),
		slog.String("detail", truncate(d.Err.Error(), maxMessage)),
	)
}

// elapsed is the time since start, a reading of the server's clock: on the
// monotonic clock when start carries it (one cheap read), else by the
// server's clock again.
func (s *Server) elapsed(start time.Time) time.Duration {
	if start != start.Round(0) { // Round(0) strips the monotonic reading
		return time.Since(start)
	}
	return s.now().Sub(start)
}
