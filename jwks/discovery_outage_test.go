package jwks

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// When the discovery document cannot be had (its endpoint down, or
// refusing: another issuer) but the jwks_uri it named before still serves,
// the keys keep refreshing from that jwks_uri: the issuer stays usable
// past stale_for for as long as its JWKS answers, and discovery is tried
// again at each attempt until it answers. Before any discovery succeeded
// there is no jwks_uri to fall back on.
func TestFetcherDiscoveryOutage(t *testing.T) {
	tests := []struct {
		name string
		fail func(ks *keyServer)
	}{
		{name: "discovery-503", fail: func(ks *keyServer) { ks.discoveryStatus = http.StatusServiceUnavailable }},
		{name: "discovery-other-issuer", fail: func(ks *keyServer) {
			ks.discovery = []byte(`{"issuer":"https://other.example/","jwks_uri":"` + ks.URL() + `"}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, testkeys.JWKS(keyA))
				clk := newBubbleClock()
				const staleFor = 2 * time.Hour
				f, d := startFetcher(t, clk, Options{Discovery: true, Issuer: ks.base, MaxInterval: time.Hour, StaleFor: staleFor})
				ks.set(tt.fail)
				before := ks.discoveryHits.Load()
				for clk.Now().Sub(t0) < 3*staleFor {
					d = clk.step(t, d)
					if now := clk.Now(); !f.Keys().Load().Usable(now) {
						t.Fatalf("at +%v with discovery failing and the JWKS served: Usable() = false (last success %v); status %+v",
							now.Sub(t0), f.Keys().Status().LastSuccess.Sub(t0), f.Keys().Status())
					}
				}
				if got := f.Keys().Status().LastSuccess; clk.Now().Sub(got) > time.Hour {
					t.Errorf("last success at +%v, now +%v: the JWKS was not refreshed", got.Sub(t0), clk.Now().Sub(t0))
				}
				if ks.discoveryHits.Load() == before {
					t.Errorf("discovery was not tried again during the outage")
				}
			})
		})
	}
}

// A restart during a discovery outage (the JWKS still served) refreshes
// the keys from the jwks_uri persisted with the last good set in StateDir,
// as a running fetcher does, instead of serving the persisted set until
// stale_for and then nothing; its introspection_endpoint comes back too.
func TestFetcherDiscoveryOutageAcrossRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		ks.set(func(ks *keyServer) {
			ks.discovery = []byte(`{"issuer":"` + ks.base + `","jwks_uri":"` + ks.URL() + `","introspection_endpoint":"` + ks.base + `/introspect"}`)
		})
		dir := t.TempDir()
		o := Options{Discovery: true, Issuer: ks.base, StateDir: dir}
		first, _ := startFetcher(t, newBubbleClock(), o)
		first.Close()

		ks.set(func(ks *keyServer) { ks.discoveryStatus = http.StatusServiceUnavailable })
		clk := newBubbleClock()
		clk.Advance(time.Hour)
		f, _ := startFetcher(t, clk, o)
		if st := f.Keys().Status(); !st.LastSuccess.Equal(clk.Now()) || st.LastError != "" {
			t.Errorf("after a restart with discovery down: Status() = %+v, want a success from the persisted jwks_uri", st)
		}
		if got := f.IntrospectionEndpoint(); got != ks.base+"/introspect" {
			t.Errorf("after a restart with discovery down: IntrospectionEndpoint() = %q, want the persisted one", got)
		}
	})
}
