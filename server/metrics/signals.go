package metrics

import (
	"cmp"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jwksverify/jwksverify/server"
)

// SignalEvents counts the revocation signals received
// (jwksverify_signal_events_total): it implements signals.Metrics. It is
// safe for concurrent use.
type SignalEvents struct {
	vec *prometheus.CounterVec
}

// UseSignals registers jwksverify_signal_events_total{issuer,event,result}
// and returns its recorder, for the signals.Receiver of every generation
// (the counter outlives reloads). Call it once.
func (m *Metrics) UseSignals() (*SignalEvents, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "signal_events_total",
		Help: "Revocation signals received: back-channel logout tokens and SET events, by configured issuer " +
			`("unknown" when none), event ("backchannel-logout", "caep/session-revoked", …, "other"; "unknown" for a token ` +
			"refused before its events were read) and result (applied, ignored, unsupported, invalid, replayed, unavailable).",
	}, []string{"issuer", "event", "result"})
	if err := m.reg.Register(vec); err != nil {
		return nil, err
	}
	return &SignalEvents{vec: vec}, nil
}

// SignalEvent counts one event. Its labels are bounded by package signals:
// a configured issuer or "" (counted as "unknown"), an event name of its
// table, a result word.
func (s *SignalEvents) SignalEvent(issuer, event, result string) {
	s.vec.WithLabelValues(cmp.Or(issuer, server.UnknownIssuer), event, result).Inc()
}
