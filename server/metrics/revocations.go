package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jwksverify/jwksverify/revoke"
)

// RevocationSource is what the revocation metrics read: package revoke's
// stores (Memory, Redis) implement it.
type RevocationSource interface {
	// Index is the store's in-memory copy: its entries and age.
	Index() *revoke.Index
	// Added counts the entries added through this process.
	Added() map[revoke.Added]uint64
}

// UseRevocations exports the metrics of the revocation store src:
// jwksverify_revocations_total{issuer,source,kind} (entries added through
// this process), jwksverify_revocation_entries{issuer} (live entries of
// the copy) and jwksverify_revocation_copy_age_seconds (how long since the
// copy was proven whole; 0 for a store that is never stale). Call it once.
func (m *Metrics) UseRevocations(src RevocationSource) error {
	if src == nil {
		return errors.New("metrics: no revocation store")
	}
	c := &revocationCollector{
		src: src, now: m.col.now,
		added:   desc("revocations_total", "Revocation entries added through this process, by configured issuer, source (backchannel_logout, ssf_push, ssf_poll, admin) and kind (jti, sid, sub, client_id, issuer).", "issuer", "source", "kind"),
		entries: desc("revocation_entries", "Live revocation entries in this replica's copy, by configured issuer.", "issuer"),
		age:     desc("revocation_copy_age_seconds", "Time since this replica's copy of the revocations was last proven whole (store: redis; 0 for store: memory). Above revocation.max_staleness every token is answered keys_unavailable."),
	}
	return m.reg.Register(c)
}

type revocationCollector struct {
	src                 RevocationSource
	now                 func() time.Time
	added, entries, age *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c *revocationCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.added
	ch <- c.entries
	ch <- c.age
}

// Collect implements prometheus.Collector.
func (c *revocationCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	for k, n := range c.src.Added() {
		ch <- prometheus.MustNewConstMetric(c.added, prometheus.CounterValue, float64(n), k.Issuer, string(k.Source), string(k.Kind))
	}
	for issuer, n := range c.src.Index().Counts(now) {
		ch <- prometheus.MustNewConstMetric(c.entries, prometheus.GaugeValue, float64(n), issuer)
	}
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, c.src.Index().Age(now).Seconds())
}
