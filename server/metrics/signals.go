package metrics

import (
	"cmp"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jwksverify/jwksverify/server"
)

// SignalEvents counts the revocation signals received
// (jwksverify_signal_events_total) and the polls of SET streams
// (jwksverify_ssf_polls_total), and says which streams' last poll failed
// (jwksverify_ssf_poll_failing): it implements signals.Metrics and
// signals.PollMetrics. It is safe for concurrent use.
type SignalEvents struct {
	vec, polls *prometheus.CounterVec
	failing    *prometheus.GaugeVec
}

// UseSignals registers jwksverify_signal_events_total{issuer,event,result},
// jwksverify_ssf_polls_total{issuer,result} and
// jwksverify_ssf_poll_failing{issuer} and returns their recorder, for the signals.Receiver and the signals.Pollers of every
// generation (the counters outlive reloads). Call it once.
func (m *Metrics) UseSignals() (*SignalEvents, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "signal_events_total",
		Help: "Revocation signals received: back-channel logout tokens and SET events, by configured issuer " +
			`("unknown" when none), event ("backchannel-logout", "caep/session-revoked", …, "other"; "unknown" for a token ` +
			"refused before its events were read) and result (applied, ignored, unsupported, invalid, replayed, unavailable).",
	}, []string{"issuer", "event", "result"})
	polls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "ssf_polls_total",
		Help: "Polls of an issuer's SET stream (ssf.poll), by configured issuer and result: success (the transmitter " +
			"answered 200 with a readable body), failure (unreachable, another status, a body over the bound or malformed). " +
			"A poller that only fails receives no SET: the revocations wait at the transmitter.",
	}, []string{"issuer", "result"})
	failing := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "ssf_poll_failing",
		Help: "1 while the last poll of an issuer's SET stream (ssf.poll) failed, 0 once one succeeded; no series for " +
			"an issuer whose stream is not polled. It stays 1 from a failure to the next success however long the " +
			"poller waits between polls (up to max(5m, interval) after failures).",
	}, []string{"issuer"})
	for _, c := range []prometheus.Collector{vec, polls, failing} {
		if err := m.reg.Register(c); err != nil {
			return nil, err
		}
	}
	return &SignalEvents{vec: vec, polls: polls, failing: failing}, nil
}

// SignalPoll counts one poll of issuer's stream (a configured issuer;
// result "success" or "failure", from package signals).
func (s *SignalEvents) SignalPoll(issuer, result string) {
	s.polls.WithLabelValues(issuer, result).Inc()
	failed := 0.0
	if result != "success" {
		failed = 1
	}
	s.failing.WithLabelValues(issuer).Set(failed)
}

// SignalPollStopped forgets whether issuer's last poll failed: its stream
// is no longer polled (a reload removed its ssf.poll), so a failure before
// it must not keep an alert firing.
func (s *SignalEvents) SignalPollStopped(issuer string) {
	s.failing.DeleteLabelValues(issuer)
}

// SignalEvent counts one event. Its labels are bounded by package signals:
// a configured issuer or "" (counted as "unknown"), an event name of its
// table, a result word.
func (s *SignalEvents) SignalEvent(issuer, event, result string) {
	s.vec.WithLabelValues(cmp.Or(issuer, server.UnknownIssuer), event, result).Inc()
}
