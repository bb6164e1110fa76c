package jwks

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/redact"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestStateAcrossQueryChange: a jwks_url issuer's state file was matched on
// the URL without its query (Source), so after the operator changed ?p=A
// to ?p=B (Azure AD B2C's policies share an issuer) a restart published
// A's keys for the issuer and kept them for stale_for while B's URL failed.
// The file now records a digest of the whole location.
func TestStateAcrossQueryChange(t *testing.T) {
	dir := t.TempDir()
	ksA := newKeyServer(t, testkeys.JWKS(keyA))
	synctest.Test(t, func(t *testing.T) {
		o := Options{URL: ksA.URL() + "?p=policyA", Issuer: "https://b2c.example/tid/v2.0/", StateDir: dir, StaleFor: 24 * time.Hour}
		f, _ := startFetcher(t, newBubbleClock(), o)
		if _, ok := f.Keys().Load().Lookup("a"); !ok {
			t.Fatal("setup: key a not fetched")
		}
		f.Close()
	})
	// The operator reconfigures to policy B, whose endpoint is failing (or
	// mistyped): same host and path, another query.
	ksA.set(func(ks *keyServer) { ks.status = http.StatusNotFound })
	synctest.Test(t, func(t *testing.T) {
		clk := newBubbleClock()
		clk.Advance(time.Hour)
		o := Options{URL: ksA.URL() + "?p=policyB", Issuer: "https://b2c.example/tid/v2.0/", StateDir: dir, StaleFor: 24 * time.Hour}
		f, _ := startFetcher(t, clk, o)
		clk.Advance(20 * time.Hour)
		set := f.Keys().Load()
		if _, ok := set.Lookup("a"); ok && set.Usable(clk.Now()) {
			t.Errorf("policy B's issuer verifies with policy A's key 'a' (loaded from the state of ?p=policyA), usable until %v; status %+v",
				set.UsableUntil.Sub(t0), f.Keys().Status())
		}
	})
}

// TestSavedHere: a state file names the location it was fetched from; a
// file of an older version (no location) is taken only where its Source
// was the whole location.
func TestSavedHere(t *testing.T) {
	const u, uq = "https://idp.example/keys", "https://idp.example/keys?p=a"
	at := func(o Options) *Fetcher {
		f := &Fetcher{opts: o, source: redact.String(o.URL)}
		if o.Discovery {
			f.source = "discovery:" + o.Issuer
		}
		return f
	}
	for _, tt := range []struct {
		name  string
		saver *Fetcher // nil: an older version's file
		saved stateFile
		f     *Fetcher
		want  bool
	}{
		{"same-url", at(Options{URL: uq}), stateFile{}, at(Options{URL: uq}), true},
		{"other-query", at(Options{URL: uq}), stateFile{}, at(Options{URL: uq + "b"}), false},
		{"same-discovery", at(Options{Discovery: true, DiscoveryURL: uq}), stateFile{}, at(Options{Discovery: true, DiscoveryURL: uq}), true},
		{"other-discovery", at(Options{Discovery: true, DiscoveryURL: uq}), stateFile{}, at(Options{Discovery: true, DiscoveryURL: u}), false},
		{"url-then-discovery", at(Options{URL: u}), stateFile{}, at(Options{Discovery: true, DiscoveryURL: u}), false},
		{"old-file-no-query", nil, stateFile{Source: u}, at(Options{URL: u}), true},
		{"old-file-query", nil, stateFile{Source: u}, at(Options{URL: uq}), false},
		{"old-file-discovery", nil, stateFile{DiscoveryURL: uq}, at(Options{Discovery: true, DiscoveryURL: uq}), true},
		{"old-file-other-discovery", nil, stateFile{DiscoveryURL: u}, at(Options{Discovery: true, DiscoveryURL: uq}), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.saved
			if tt.saver != nil {
				s.Location = tt.saver.location()
			}
			if got := tt.f.savedHere(s); got != tt.want {
				t.Errorf("savedHere() = %v, want %v", got, tt.want)
			}
		})
	}
}
