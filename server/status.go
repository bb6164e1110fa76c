package server

import (
	"net/http"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/introspect"
)

// serveHealthz is GET /healthz: the process is alive.
func (s *Server) serveHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Status  string `json:"status"`
		Version string `json:"version"`
	}{"ok", s.version})
}

// serveReadyz is GET /readyz: 200 {"ready":true} only when every issuer has
// a usable key set and the server is not draining; 503
// {"ready":false,"draining":true} once draining, else 503
// {"ready":false,"issuers_not_ready":[...]}.
func (s *Server) serveReadyz(w http.ResponseWriter, r *http.Request) {
	if s.Draining() {
		writeJSON(w, http.StatusServiceUnavailable, struct {
			Ready    bool `json:"ready"`
			Draining bool `json:"draining"`
		}{false, true})
		return
	}
	ok, notReady := s.Ready()
	if ok {
		writeJSON(w, http.StatusOK, struct {
			Ready bool `json:"ready"`
		}{true})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, struct {
		Ready    bool     `json:"ready"`
		NotReady []string `json:"issuers_not_ready"`
		// RevocationsStale: the copy of the revocations is older than
		// max_staleness (every issuer is then not ready).
		RevocationsStale bool `json:"revocations_stale,omitempty"`
	}{false, notReady, s.revocationsStale(s.now())})
}

// issuersView is the body of /v1/issuers.
type issuersView struct {
	Issuers []issuerView `json:"issuers"`
	// ConfigHash is Options.ConfigHash: which configuration is loaded.
	ConfigHash string `json:"config_hash,omitempty"`
}

// issuerView is one issuer in /v1/issuers. Times are RFC 3339 in UTC, null
// when they never happened.
type issuerView struct {
	Issuer string `json:"issuer"`
	Source string `json:"source"`
	// Ready: the issuer has a usable key set now.
	Ready   bool            `json:"ready"`
	Keys    []keyView       `json:"keys"`
	Skipped []cache.Skipped `json:"skipped"`
	// FetchedAt is when the current set was last confirmed by its source.
	FetchedAt   *string `json:"fetched_at"`
	LastFetch   *string `json:"last_fetch"`
	LastSuccess *string `json:"last_success"`
	NextRefresh *string `json:"next_refresh"`
	// UsableUntil is the end of the set's bounded staleness; null when the
	// set never goes stale (local keys) or there is no set.
	UsableUntil *string `json:"usable_until"`
	LastError   string  `json:"last_error"`
	// Stale: the set serves although its source's latest attempt failed,
	// or it is past its staleness bound.
	Stale bool `json:"stale"`
	// StaleForRemainingSeconds is how long the set stays usable; null when
	// it never goes stale or there is no set.
	StaleForRemainingSeconds *float64 `json:"stale_for_remaining_seconds"`
	// AgeSeconds is the time since the set was last confirmed; null
	// without a set.
	AgeSeconds          *float64  `json:"age_seconds"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	Stats               statsView `json:"stats"`
	// Introspection is the issuer's RFC 7662 client, absent when opaque
	// tokens are not introspected there.
	Introspection *introspectionView `json:"introspection,omitempty"`
	// SPIFFE is the issuer's trust domain, absent for a normal issuer.
	SPIFFE *spiffeView `json:"spiffe,omitempty"`
}

// introspectionView is an issuer's introspection client in /v1/issuers.
type introspectionView struct {
	// Endpoint is the introspection endpoint in use, "" while discovery has
	// not named one.
	Endpoint    string  `json:"endpoint"`
	LastSuccess *string `json:"last_success"`
	LastError   string  `json:"last_error"`
	// Calls counts upstream calls by result; the cache counters follow.
	Calls        map[string]uint64 `json:"calls"`
	CacheHits    uint64            `json:"cache_hits"`
	StaleServed  uint64            `json:"stale_served"`
	CacheEntries int               `json:"cache_entries"`
	CacheBytes   int64             `json:"cache_bytes"`
	// Overloaded counts calls not made at the concurrency limit; InFlight
	// is the calls in flight now.
	Overloaded uint64 `json:"overloaded"`
	InFlight   int    `json:"in_flight"`
}

// spiffeView is a SPIFFE issuer's trust domain in /v1/issuers (its bundle's
// keys, refresh times and errors are the issuer's own fields).
type spiffeView struct {
	TrustDomain string `json:"trust_domain"`
}

// introspectionReporter is what /v1/issuers reads of an introspector
// (*introspect.Client implements it).
type introspectionReporter interface {
	Status() introspect.Status
}

// keyView is one key in /v1/issuers. The thumbprint of a symmetric key is
// left out: it is a hash of the secret and would allow guessing it offline.
type keyView struct {
	Kid        string   `json:"kid"`
	Kty        string   `json:"kty"`
	Crv        string   `json:"crv,omitempty"`
	Alg        string   `json:"alg,omitempty"`
	Use        string   `json:"use,omitempty"`
	KeyOps     []string `json:"key_ops,omitempty"`
	Size       int      `json:"size"`
	Thumbprint string   `json:"thumbprint,omitempty"`
	Local      bool     `json:"local"`
}

// statsView is cache.FetchStats in JSON.
type statsView struct {
	Fetches             uint64 `json:"fetches"`
	NotModified         uint64 `json:"not_modified"`
	Errors              uint64 `json:"errors"`
	KeysSkipped         uint64 `json:"keys_skipped"`
	UnknownKidRefreshes uint64 `json:"unknown_kid_refreshes"`
	SuppressedRefreshes uint64 `json:"suppressed_refreshes"`
}

// serveIssuers is GET /v1/issuers: each issuer's keys, skipped keys, fetch
// times, last error, staleness and counters, in configured order.
func (s *Server) serveIssuers(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	out := issuersView{Issuers: make([]issuerView, 0, len(s.issuers)), ConfigHash: s.configHash}
	for _, is := range s.issuers {
		out.Issuers = append(out.Issuers, viewIssuer(is, now))
	}
	writeJSON(w, http.StatusOK, out)
}

func viewIssuer(is *issuerInfo, now time.Time) issuerView {
	set, st := is.keys.Load(), is.keys.Status()
	v := issuerView{
		Issuer:              is.name,
		Source:              st.Source,
		Ready:               set.Usable(now),
		Keys:                []keyView{},
		Skipped:             []cache.Skipped{},
		LastFetch:           timeString(st.LastAttempt),
		LastSuccess:         timeString(st.LastSuccess),
		NextRefresh:         timeString(st.NextRefresh),
		LastError:           st.LastError,
		ConsecutiveFailures: st.ConsecutiveFailures,
		Stats: statsView{
			Fetches:             st.Stats.Fetches,
			NotModified:         st.Stats.NotModified,
			Errors:              st.Stats.Errors,
			KeysSkipped:         st.Stats.KeysSkipped,
			UnknownKidRefreshes: st.Stats.UnknownKidRefreshes,
			SuppressedRefreshes: st.Stats.SuppressedRefreshes,
		},
	}
	if r, ok := is.introspector.(introspectionReporter); ok {
		st := r.Status()
		v.Introspection = &introspectionView{
			Endpoint: st.Endpoint, LastSuccess: timeString(st.LastSuccess), LastError: st.LastError,
			Calls:     map[string]uint64{"active": st.Stats.Active, "inactive": st.Stats.Inactive, "error": st.Stats.Errors},
			CacheHits: st.Stats.Hits, StaleServed: st.Stats.Stale, CacheEntries: st.Stats.Entries, CacheBytes: st.Stats.Bytes,
			Overloaded: st.Stats.Overloaded, InFlight: st.Stats.InFlight,
		}
	}
	if is.trustDomain != "" {
		v.SPIFFE = &spiffeView{TrustDomain: is.trustDomain}
	}
	if set == nil {
		return v
	}
	for _, k := range set.Keys() {
		kv := keyView{Kid: k.Kid, Kty: k.Kty, Crv: k.Crv, Alg: k.Alg, Use: k.Use, KeyOps: k.KeyOps, Size: k.Size, Thumbprint: k.Thumbprint, Local: k.Local}
		if k.Kty == "oct" {
			kv.Thumbprint = ""
		}
		v.Keys = append(v.Keys, kv)
	}
	v.Skipped = append(v.Skipped, set.Skipped()...)
	v.FetchedAt = timeString(set.FetchedAt)
	v.UsableUntil = timeString(set.UsableUntil)
	if !set.FetchedAt.IsZero() {
		v.AgeSeconds = seconds(now.Sub(set.FetchedAt))
	}
	if !set.UsableUntil.IsZero() {
		v.StaleForRemainingSeconds = seconds(max(set.UsableUntil.Sub(now), 0))
	}
	v.Stale = !v.Ready || st.ConsecutiveFailures > 0
	return v
}

func timeString(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

func seconds(d time.Duration) *float64 {
	f := d.Seconds()
	return &f
}
