package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestResilienceLiveCounters: right after a storm of unknown kids that the
// budget suppresses — with no fetch attempt since — /metrics and
// /v1/issuers count every one of them (the counters are the live ones, not
// a copy taken at the end of the last fetch).
func TestResilienceLiveCounters(t *testing.T) {
	t.Parallel()
	key := rhKey{testkeys.EC256A, "live-a", "ES256"}
	idp := newFakeIdP(t, "public, max-age=300", key.jwk())
	r := rhRefresh{minInterval: time.Second, maxInterval: time.Hour, defaultTTL: time.Hour,
		unknownKid: time.Hour, staleFor: time.Hour, fetchTimeout: 5 * time.Second}
	svc := startJWKSVerify(t, rhConfig(idp.Issuer, "jwks_url: "+idp.JWKSURL, r, ""))
	base := "http://" + svc.HTTP
	c := rhClient(t)

	// The first unknown kid spends the budget (one refresh per hour); the
	// storm after it is suppressed, each request at once.
	const storm = 200
	for i := range storm + 1 {
		v, err := rhVerify(c, base, randomKidToken(idp.Issuer))
		if err != nil || v.Error != "unknown_kid" {
			t.Fatalf("random-kid token %d = %v, %v; want unknown_kid", i, v, err)
		}
	}

	m := rhMetrics(t, c, base)
	issuers := rhIssuerStats(t, c, base)
	tests := []struct {
		name        string
		metric      string
		fromIssuers uint64
		want        uint64
	}{
		{name: "fetches", metric: "jwks_fetches_total", fromIssuers: issuers.Fetches, want: 2},
		{name: "unknown-kid-refreshes", metric: "jwks_unknown_kid_refreshes_total", fromIssuers: issuers.UnknownKidRefreshes, want: 1},
		{name: "suppressed", metric: "jwks_unknown_kid_refreshes_suppressed_total", fromIssuers: issuers.SuppressedRefreshes, want: storm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rhIssuerMetric(m, tt.metric, idp.Issuer); got != float64(tt.want) {
				t.Errorf("/metrics %s = %v, want %d", tt.metric, got, tt.want)
			}
			if tt.fromIssuers != tt.want {
				t.Errorf("/v1/issuers stats: %s = %d, want %d", tt.name, tt.fromIssuers, tt.want)
			}
		})
	}
	if n := len(idp.Hits(idpJWKSPath)); n != 2 {
		t.Errorf("the IdP saw %d JWKS requests, want 2 (start-up and the one unknown-kid refresh)", n)
	}
}

// rhFetchStats are the stats of an issuer in /v1/issuers.
type rhFetchStats struct {
	Fetches             uint64 `json:"fetches"`
	UnknownKidRefreshes uint64 `json:"unknown_kid_refreshes"`
	SuppressedRefreshes uint64 `json:"suppressed_refreshes"`
}

// rhIssuerStats reads the stats of the only issuer in GET base/v1/issuers.
func rhIssuerStats(t *testing.T, c *http.Client, base string) rhFetchStats {
	t.Helper()
	resp, err := c.Get(base + "/v1/issuers")
	if err != nil {
		t.Fatalf("GET /v1/issuers: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		Issuers []struct {
			Stats rhFetchStats `json:"stats"`
		} `json:"issuers"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&out); err != nil || len(out.Issuers) != 1 {
		t.Fatalf("GET /v1/issuers: %d issuers, %v; want 1", len(out.Issuers), err)
	}
	return out.Issuers[0].Stats
}
