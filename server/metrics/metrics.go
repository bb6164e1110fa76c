// Package metrics exports jwksverify's Prometheus metrics: the decisions
// of a [server.Server] (it implements [server.Metrics]) and, at scrape
// time, what the verifier's issuers' cache.Keys and token cache count. It
// is a package of its own so that a Go service using only
// server.Middleware links no Prometheus code.
package metrics

import (
	"cmp"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

const namespace = "jwksverify"

// Options configure [New].
type Options struct {
	// Verifier is the verifier whose issuers (key sets, fetch counters,
	// readiness) and token cache are exported. Required.
	Verifier *verify.Verifier
	// Registry receives the metrics and is what [Metrics.Handler] serves.
	// Nil means a new registry with the Go and process collectors.
	Registry *prometheus.Registry
	// Now returns the current time, for key ages and readiness. Nil means
	// the verifier's clock ((*verify.Verifier).Now).
	Now func() time.Time
	// Version and Revision label jwksverify_build_info (with the Go
	// version). Empty means "unknown".
	Version, Revision string
	// Policies are the server's policies (server.Options.Policies): their
	// names label policy_decisions_total. Nil means none (the labels of
	// server's PolicyAnyToken, PolicyUnknown and PolicyUnrouted only).
	Policies *policy.Set
	// Redis returns the counters of the Redis client in use and true, or
	// false while none is configured (then no redis_* series). It is called
	// at each scrape. Nil means none.
	Redis func() (redisconn.Stats, bool)
}

// Metrics are the instruments of one server. Every label value is bounded:
// issuer labels are configured issuers or server.UnknownIssuer, classes are
// SPEC words or server.ClassValid, endpoints are server.Endpoints. The
// children are created up front so that recording a decision is a map
// lookup and atomic adds. It is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry
	// outcomes are the verify_total children by issuer label: an immutable
	// map, replaced whole by Use.
	outcomes  atomic.Pointer[map[string]*issuerOutcomes]
	policies  map[string]map[string]prometheus.Counter // policy label -> class -> counter, made by New
	decisions *prometheus.CounterVec                   // for policies a reload added
	classes   map[string]bool                          // the class labels of policy_decisions_total
	latency   []endpointLatency                        // by server.Endpoints, in its order
	vec       *prometheus.CounterVec                   // verify_total
	col       *collector
	mu        sync.Mutex // serializes Use and SetConfigHash

	reloads    *prometheus.CounterVec        // config_reloads_total{result}
	reloadOK   prometheus.Gauge              // config_last_reload_successful
	configInfo *prometheus.GaugeVec          // config_info{hash}
	clientAuth map[string]prometheus.Counter // by reason
	binding    *prometheus.CounterVec        // sender_constraint_total{issuer,kind,outcome}
}

// Reload results, the values of config_reloads_total's result label.
const (
	ReloadSuccess = "success"
	ReloadFailure = "failure"
)

// issuerOutcomes are the verify_total children of one issuer label.
type issuerOutcomes struct {
	valid   prometheus.Counter
	classes map[string]prometheus.Counter
	// binding are the sender_constraint_total children, by kind and then
	// outcome (none for server.UnknownIssuer).
	binding map[string]map[string]prometheus.Counter
}

// New validates opts, registers the metrics on the registry and returns
// them. Pass the result as server.Options.Metrics and its Handler as
// server.Options.MetricsHandler. It fails when opts.Verifier is nil or the
// registry already holds these metrics.
func New(opts Options) (*Metrics, error) {
	if opts.Verifier == nil {
		return nil, ErrNoVerifier
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return nil, fmt.Errorf("metrics: register Go collector: %w", err)
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, fmt.Errorf("metrics: register process collector: %w", err)
		}
	}
	now := opts.Now
	if now == nil {
		now = opts.Verifier.Now
	}
	issuers := issuersOf(opts.Verifier)
	col := &collector{now: now, d: newCollectorDescs(), redis: opts.Redis}
	col.cur.Store(&collected{v: opts.Verifier, issuers: issuers})

	vs := newVecs()
	vs.build.WithLabelValues(cmp.Or(opts.Version, "unknown"), cmp.Or(opts.Revision, "unknown"), runtime.Version()).Set(1)
	for _, r := range []string{ReloadSuccess, ReloadFailure} {
		vs.reloads.WithLabelValues(r)
	}
	vs.reloadOK.Set(1) // the configuration serving now loaded
	for _, c := range []prometheus.Collector{vs.outcomes, vs.latency, vs.clientAuth, vs.build, vs.decisions, col, vs.reloads, vs.reloadOK, vs.configInfo, vs.binding} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	m := &Metrics{
		reg:        reg,
		vec:        vs.outcomes,
		col:        col,
		reloads:    vs.reloads,
		reloadOK:   vs.reloadOK,
		configInfo: vs.configInfo,
		binding:    vs.binding,
		clientAuth: make(map[string]prometheus.Counter),
	}
	for _, r := range server.ClientAuthReasons() {
		m.clientAuth[r] = vs.clientAuth.WithLabelValues(r)
	}
	m.outcomes.Store(m.outcomesOf(issuers, nil))
	for _, e := range server.Endpoints() {
		m.latency = append(m.latency, endpointLatency{e, vs.latency.WithLabelValues(e)})
	}
	m.setPolicies(vs.decisions, opts.Policies)
	return m, nil
}

// vecs are the metric families New registers, besides the collector's.
type vecs struct {
	outcomes, clientAuth, decisions, binding, reloads *prometheus.CounterVec
	latency                                           *prometheus.HistogramVec
	build, configInfo                                 *prometheus.GaugeVec
	reloadOK                                          prometheus.Gauge
}

// newVecs declares the metric families of New: the table of names, help
// texts and labels.
func newVecs() vecs {
	var v vecs
	v.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "verify_total",
		Help:      `Tokens decided, by configured issuer ("unknown" when the token's iss is no configured issuer) and class ("valid" when accepted).`,
	}, []string{"issuer", "class"})
	v.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "verify_duration_seconds",
		Help:      "Time to decide one token, by endpoint.",
		Buckets: []float64{
			.000005, .00001, .000025, .00005, .0001, .00025, .0005,
			.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5,
		},
	}, []string{"endpoint"})
	v.clientAuth = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "introspection_client_auth_failures_total",
		Help:      `Calls to /introspect refused because the client did not authenticate, by reason ("missing", "unknown_client", "wrong_secret", "bearer").`,
	}, []string{"reason"})
	v.build = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "build_info",
		Help:      "Always 1; the labels say which build runs: version, VCS revision, Go version.",
	}, []string{"version", "revision", "go"})
	v.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "policy_decisions_total",
		Help:      `Requests decided under an authorization policy, by policy (its name; "_any" for the empty default_policy, "_unknown" for a named policy that does not exist, "_unrouted" when the original request was missing or ambiguous) and class ("valid" allowed, "anonymous" allowed without a token, "forbidden", or the token's rejection class).`,
	}, []string{"policy", "class"})
	v.binding = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "sender_constraint_total",
		Help:      `Sender-constraint checks of valid tokens, by configured issuer, kind (dpop, mtls) and outcome (ok, replayed, invalid_dpop_proof, binding_mismatch, keys_unavailable).`,
	}, []string{"issuer", "kind", "outcome"})
	v.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "config_reloads_total",
		Help:      `Configuration reloads (SIGHUP or a change of the file), by result ("success", or "failure": the old configuration keeps serving).`,
	}, []string{"result"})
	v.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "config_last_reload_successful",
		Help:      "1 when the last configuration reload succeeded (or none was tried since the start), 0 after a failed one until one succeeds: the file on disk is not the configuration serving, and a restart would not start with it.",
	})
	v.configInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "config_info",
		Help:      "1 for the hash of the configuration being served (the config_hash of /v1/issuers).",
	}, []string{"hash"})
	return v
}

// setPolicies builds the policy_decisions_total children of every policy
// label and class, so that a decision never creates a series.
func (m *Metrics) setPolicies(decisions *prometheus.CounterVec, set *policy.Set) {
	policyLabels := []string{server.PolicyAnyToken, server.PolicyUnknown, server.PolicyUnrouted}
	for _, p := range set.Policies() {
		policyLabels = append(policyLabels, p.Name())
	}
	m.decisions, m.classes = decisions, map[string]bool{server.ClassValid: true, server.ClassAnonymous: true}
	for _, c := range verify.Classes() {
		m.classes[c] = true
	}
	m.policies = make(map[string]map[string]prometheus.Counter, len(policyLabels))
	for _, pl := range policyLabels {
		byClass := map[string]prometheus.Counter{
			server.ClassValid:     decisions.WithLabelValues(pl, server.ClassValid),
			server.ClassAnonymous: decisions.WithLabelValues(pl, server.ClassAnonymous),
		}
		for _, c := range verify.Classes() {
			byClass[c] = decisions.WithLabelValues(pl, c)
		}
		m.policies[pl] = byClass
	}
}

// outcomesOf returns the verify_total children of issuers and of
// server.UnknownIssuer, reusing those of old.
func (m *Metrics) outcomesOf(issuers []issuer, old map[string]*issuerOutcomes) *map[string]*issuerOutcomes {
	out := make(map[string]*issuerOutcomes, len(issuers)+1)
	labels := []string{server.UnknownIssuer}
	for _, is := range issuers {
		labels = append(labels, is.name)
	}
	for _, iss := range labels {
		if o := old[iss]; o != nil {
			out[iss] = o
			continue
		}
		o := &issuerOutcomes{valid: m.vec.WithLabelValues(iss, server.ClassValid), classes: make(map[string]prometheus.Counter)}
		for _, c := range verify.Classes() {
			o.classes[c] = m.vec.WithLabelValues(iss, c)
		}
		if iss != server.UnknownIssuer {
			o.binding = make(map[string]map[string]prometheus.Counter)
			for _, k := range server.BindingKinds() {
				o.binding[k] = make(map[string]prometheus.Counter)
				for _, oc := range server.BindingOutcomes() {
					o.binding[k][oc] = m.binding.WithLabelValues(iss, k, oc)
				}
			}
		}
		out[iss] = o
	}
	return &out
}

// Use makes v the verifier whose issuers and token cache are exported (a
// configuration reload swapped it in): verify_total keeps counting the
// issuers v shares with the previous one, starts at zero for new ones and
// drops the series of removed ones. It is safe for concurrent use with
// recording and scraping.
func (m *Metrics) Use(v *verify.Verifier) {
	m.mu.Lock()
	defer m.mu.Unlock()
	issuers := issuersOf(v)
	old := *m.outcomes.Load()
	next := m.outcomesOf(issuers, old)
	m.outcomes.Store(next)
	for name := range old {
		if _, ok := (*next)[name]; !ok {
			m.vec.DeletePartialMatch(prometheus.Labels{"issuer": name})
			m.binding.DeletePartialMatch(prometheus.Labels{"issuer": name})
		}
	}
	m.col.cur.Store(&collected{v: v, issuers: issuers})
}

// UseMinter makes the minting metrics (jwksverify_mint_*) report m, the
// minter of the generation being served; nil leaves them out. A new
// minter starts its counters from zero.
func (m *Metrics) UseMinter(mt *mint.Minter) { m.col.minter.Store(mt) }

// UseDPoP makes jwksverify_dpop_proof_keys_total report ck, the DPoP
// checker of the generation being served; nil leaves it out. A new checker
// starts its counters (and its key cache) from zero.
func (m *Metrics) UseDPoP(ck *dpop.Checker) { m.col.dpop.Store(ck) }

// Reloaded counts one configuration reload with its result (ReloadSuccess
// or ReloadFailure), and sets config_last_reload_successful by it.
func (m *Metrics) Reloaded(result string) {
	m.reloads.WithLabelValues(result).Inc()
	if result == ReloadSuccess {
		m.reloadOK.Set(1)
	} else {
		m.reloadOK.Set(0)
	}
}

// SetConfigHash sets config_info to the hash of the configuration being
// served.
func (m *Metrics) SetConfigHash(hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.configInfo.Reset()
	m.configInfo.WithLabelValues(hash).Set(1)
}

// Decided implements [server.Metrics]: it counts one decided token and
// observes its latency. Labels outside the bounded sets are not recorded.
func (m *Metrics) Decided(endpoint, issuer, class string, elapsed time.Duration) {
	if o := (*m.outcomes.Load())[issuer]; o != nil {
		if class == server.ClassValid {
			o.valid.Inc()
		} else if c, ok := o.classes[class]; ok {
			c.Inc()
		}
	}
	for i := range m.latency {
		if m.latency[i].endpoint == endpoint {
			m.latency[i].o.Observe(elapsed.Seconds())
			return
		}
	}
}

// endpointLatency is the latency histogram of one endpoint. A handful of
// endpoints, each a constant: comparing the strings (the same pointer, as
// a rule) costs less than hashing one for a map.
type endpointLatency struct {
	endpoint string
	o        prometheus.Observer
}

// ClientAuthFailed implements [server.Metrics]: it counts one refused
// introspection client. A reason outside server.ClientAuthReasons is not
// recorded.
func (m *Metrics) ClientAuthFailed(reason string) {
	if c, ok := m.clientAuth[reason]; ok {
		c.Inc()
	}
}

// Authorized implements server.PolicyMetrics: it counts one decision
// under a policy. Labels outside the bounded sets are not recorded.
func (m *Metrics) Authorized(policy, class string) {
	if c, ok := m.policies[policy][class]; ok {
		c.Inc()
		return
	}
	// A policy a reload added: its name comes from the configuration, so
	// the label set stays bounded.
	if m.classes[class] {
		m.decisions.WithLabelValues(policy, class).Inc()
	}
}

// BindingChecked implements [server.BindingMetrics]: it counts one sender
// constraint check. Labels outside the bounded sets are not recorded.
func (m *Metrics) BindingChecked(issuer, kind, outcome string) {
	if o := (*m.outcomes.Load())[issuer]; o != nil {
		if c, ok := o.binding[kind][outcome]; ok {
			c.Inc()
		}
	}
}

// Handler serves the registry in the Prometheus text format (GET /metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// issuersOf returns v's issuers as the collector reads them: New and Use
// build them alike, so that a reload keeps the introspection series.
func issuersOf(v *verify.Verifier) []issuer {
	var issuers []issuer
	for _, vi := range v.Issuers() {
		is := issuer{name: vi.Issuer, keys: vi.Keys}
		is.introspection, _ = vi.Introspector.(introspectionStats)
		issuers = append(issuers, is)
	}
	return issuers
}

// issuer is one configured issuer, as the collector reads it.
type issuer struct {
	name          string
	keys          *cache.Keys
	introspection introspectionStats // nil: opaque tokens not introspected there
}

// introspectionStats is what the collector reads of an issuer's
// introspector (*introspect.Client implements it).
type introspectionStats interface {
	Stats() introspect.Stats
}

// collector exports, at scrape time, what the issuers' cache.Keys and the
// verifier count: fetch counters, key-set age and size, readiness, token
// cache counters and the crypto cross-checks.
type collector struct {
	cur    atomic.Pointer[collected]
	minter atomic.Pointer[mint.Minter]  // nil: no minting
	dpop   atomic.Pointer[dpop.Checker] // nil: no DPoP
	now    func() time.Time
	d      collectorDescs
	redis  func() (redisconn.Stats, bool) // nil: none
}

// collected is what the collector reads: the current verifier and its
// issuers, replaced whole by [Metrics.Use].
type collected struct {
	v       *verify.Verifier
	issuers []issuer
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
}

// newCollectorDescs builds the collector's descriptions, once per server:
// the package keeps no globals.
func newCollectorDescs() collectorDescs {
	return collectorDescs{
		fetches:     desc("jwks_fetches_total", "Requests sent to the issuer's key source (JWKS or discovery), or reads of its jwks_file; failures included.", "issuer"),
		notModified: desc("jwks_not_modified_total", "304 Not Modified answers from the issuer's key source.", "issuer"),
		errors:      desc("jwks_fetch_errors_total", "Failed attempts to get the issuer's keys (network, status, parse, policy).", "issuer"),
		skippedTot:  desc("jwks_keys_skipped_total", "Keys left out of parsed sets (unsupported, broken, refused).", "issuer"),
		unknownKid:  desc("jwks_unknown_kid_refreshes_total", "Refreshes triggered by a token with an unknown kid.", "issuer"),
		suppressed:  desc("jwks_unknown_kid_refreshes_suppressed_total", "Unknown-kid refreshes refused: budget spent or kid remembered as missing.", "issuer"),
		negative:    desc("jwks_negative_kid_hits_total", "Tokens answered unknown_kid from the memory of kids just proven absent, without asking the source.", "issuer"),
		failures:    desc("jwks_consecutive_failures", "Failed attempts since the issuer's last successful fetch.", "issuer"),
		keys:        desc("jwks_keys", "Usable keys in the issuer's current set.", "issuer"),
		skipped:     desc("jwks_skipped_keys", "Keys skipped in the issuer's current set.", "issuer"),
		age:         desc("jwks_age_seconds", "Time since the issuer's current set was last confirmed by its source (a fetch, a 304, or a poll that found its jwks_file unchanged).", "issuer"),
		remaining:   desc("jwks_usable_remaining_seconds", "Time until the issuer's current set goes stale (absent for sets that never do).", "issuer"),
		ready:       desc("issuer_ready", "1 when the issuer has a usable key set, else 0.", "issuer"),
		hits:        desc("token_cache_hits_total", "Verified-token cache hits."),
		misses:      desc("token_cache_misses_total", "Verified-token cache misses."),
		evictions:   desc("token_cache_evictions_total", "Verified-token cache evictions."),
		entries:     desc("token_cache_entries", "Entries in the verified-token cache."),
		bytes:       desc("token_cache_bytes", "Approximate bytes held by the verified-token cache."),
		introCalls:  desc("introspection_calls_total", `Calls to the issuer's RFC 7662 introspection endpoint, by result ("active", "inactive", "error").`, "issuer", "result"),
		introHits:   desc("introspection_cache_hits_total", "Opaque tokens answered from the introspection cache while fresh.", "issuer"),
		introStale:  desc("introspection_stale_served_total", "Cached introspection answers served past their end because the endpoint could not answer.", "issuer"),
		introSize:   desc("introspection_cache_entries", "Entries in the issuer's introspection cache.", "issuer"),
		introBusy:   desc("introspection_overloaded_total", "Introspection calls not made because max_concurrent calls were in flight for all of max_wait: their tokens got a stale cached answer or keys_unavailable.", "issuer"),
		introFlight: desc("introspection_calls_in_flight", "Upstream introspection calls in flight now (at most max_concurrent).", "issuer"),
		introShared: desc("introspection_shared_cache_errors_total", "Redis failures of the shared introspection cache (cache.shared): each answered keys_unavailable.", "issuer"),
		introWaits:  desc("introspection_shared_cache_waits_total", "Shared introspection cache lookups that waited for another replica's upstream call instead of making one.", "issuer"),
		redisErrors: desc("redis_errors_total", "Redis commands and pipelines that failed (network, timeout, error answers), and calls refused because Redis may evict keys (a maxmemory-policy other than noeviction): the requests behind them got 503 keys_unavailable. Rises during a failover."),
		redisNotRep: desc("redis_not_replicated_total", "Writes refused because WAIT reported fewer replicas than redis.acknowledge_replicas (503, nothing acknowledged)."),
		mintTokens:  desc("mint_tokens_total", `Tokens minted for upstreams ("minted": signed; "reused": handed out again from the minted-token cache).`, "result"),
		mintReloads: desc("mint_keys_reloads_total", `Changes of mint.keys_file seen: "success" (taken), "failure" (refused; the previous keys keep signing).`, "result"),
		mintEntries: desc("mint_cache_entries", "Tokens in the minted-token cache."),
		mintKeysOK:  desc("mint_keys_last_reload_successful", "1 while mint.keys_file holds the keys signing (or a content taken since), 0 while its content is refused or cannot be read: the previous keys keep signing, and a restart would not start with the file."),
		dpopKeys:    desc("dpop_proof_keys_total", `Public keys of DPoP proofs whose signature was checked, by result ("parsed": the key was read from the proof's jwk; "reused": a returning client's key, by its RFC 7638 thumbprint, from the key cache).`, "result"),
		crossChecks: desc("crypto_cross_checks_total", `Accepts of the prepared RSA and EC verifiers verified again with crypto/rsa or crypto/ecdsa, by result ("agree", or "mismatch": the token was rejected).`, "result"),
	}
}

type collectorDescs struct {
	fetches, notModified, errors, skippedTot, unknownKid, suppressed     *prometheus.Desc
	negative                                                             *prometheus.Desc
	failures, keys, skipped, age, remaining, ready                       *prometheus.Desc
	hits, misses, evictions, entries, bytes                              *prometheus.Desc
	crossChecks                                                          *prometheus.Desc
	mintTokens, mintReloads, mintEntries, mintKeysOK, dpopKeys           *prometheus.Desc
	introCalls, introHits, introStale, introSize, introBusy, introFlight *prometheus.Desc
	introShared, introWaits, redisErrors, redisNotRep                    *prometheus.Desc
}

func (d collectorDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{
		d.fetches, d.notModified, d.errors, d.skippedTot, d.unknownKid, d.suppressed, d.negative,
		d.failures, d.keys, d.skipped, d.age, d.remaining, d.ready,
		d.hits, d.misses, d.evictions, d.entries, d.bytes, d.crossChecks,
		d.introCalls, d.introHits, d.introStale, d.introSize, d.introBusy, d.introFlight,
		d.introShared, d.introWaits, d.redisErrors, d.redisNotRep,
		d.mintTokens, d.mintReloads, d.mintEntries, d.dpopKeys,
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.d.all() {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	d := &c.d
	now := c.now()
	cur := c.cur.Load()
	counter := func(desc *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	for _, is := range cur.issuers {
		set, st := is.keys.Load(), is.keys.Status()
		counter(d.fetches, st.Stats.Fetches, is.name)
		counter(d.notModified, st.Stats.NotModified, is.name)
		counter(d.errors, st.Stats.Errors, is.name)
		counter(d.skippedTot, st.Stats.KeysSkipped, is.name)
		counter(d.unknownKid, st.Stats.UnknownKidRefreshes, is.name)
		counter(d.suppressed, st.Stats.SuppressedRefreshes, is.name)
		counter(d.negative, st.Stats.NegativeKidHits, is.name)
		gauge(d.failures, float64(st.ConsecutiveFailures), is.name)
		gauge(d.keys, float64(set.Len()), is.name)
		gauge(d.skipped, float64(len(set.Skipped())), is.name)
		ready := 0.0
		if set.Usable(now) {
			ready = 1
		}
		gauge(d.ready, ready, is.name)
		if set != nil && !set.FetchedAt.IsZero() {
			gauge(d.age, now.Sub(set.FetchedAt).Seconds(), is.name)
		}
		if set != nil && !set.UsableUntil.IsZero() {
			gauge(d.remaining, max(set.UsableUntil.Sub(now), 0).Seconds(), is.name)
		}
		if is.introspection != nil {
			st := is.introspection.Stats()
			counter(d.introCalls, st.Active, is.name, "active")
			counter(d.introCalls, st.Inactive, is.name, "inactive")
			counter(d.introCalls, st.Errors, is.name, "error")
			counter(d.introHits, st.Hits, is.name)
			counter(d.introStale, st.Stale, is.name)
			gauge(d.introSize, float64(st.Entries), is.name)
			counter(d.introBusy, st.Overloaded, is.name)
			gauge(d.introFlight, float64(st.InFlight), is.name)
			counter(d.introShared, st.SharedErrors, is.name)
			counter(d.introWaits, st.SharedWaits, is.name)
		}
	}
	if c.redis != nil {
		if rs, ok := c.redis(); ok {
			counter(d.redisErrors, rs.Errors)
			counter(d.redisNotRep, rs.NotReplicated)
		}
	}
	cs := cur.v.CacheStats()
	counter(d.hits, cs.Hits)
	counter(d.misses, cs.Misses)
	counter(d.evictions, cs.Evictions)
	gauge(d.entries, float64(cs.Entries))
	gauge(d.bytes, float64(cs.Bytes))
	crypto := cur.v.CryptoStats()
	mismatches := min(crypto.Mismatches, crypto.CrossChecks) // two loads: never more mismatches than checks
	counter(d.crossChecks, crypto.CrossChecks-mismatches, "agree")
	counter(d.crossChecks, mismatches, "mismatch")
	if mt := c.minter.Load(); mt != nil {
		st := mt.Stats()
		counter(d.mintTokens, st.Mints, "minted")
		counter(d.mintTokens, st.Hits, "reused")
		counter(d.mintReloads, st.Reloads, "success")
		counter(d.mintReloads, st.ReloadFailures, "failure")
		taken := 1.0
		if st.Refusing {
			taken = 0
		}
		gauge(d.mintKeysOK, taken)
		gauge(d.mintEntries, float64(st.Entries))
	}
	if ck := c.dpop.Load(); ck != nil {
		ks := ck.KeyStats()
		counter(d.dpopKeys, ks.Parses, "parsed")
		counter(d.dpopKeys, ks.Hits, "reused")
	}
}
