package jwks

import (
	"encoding/json"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/redact"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// A state file is trusted within its bounds only (TestFetcherHostileStateFile):
// its set may serve until the source is reached, for stale_for at most. Its
// validators made it more: the first fetch after a restart sent the file's
// ETag (or Last-Modified), and the source's 304 renewed whatever set the
// file held. A file written by someone other than the fetcher (a shared or
// restored volume, another process with write access to state_dir) that
// pairs a key of its own with the source's current ETag — which anyone can
// read from the public JWKS — had that key verify tokens for good while
// the IdP was healthy: every refresh was answered 304, readiness green.
// Whatever a file says about validators, the set it holds is checked
// against the source's body at the first fetch.
func TestStateFileValidatorsDoNotRenewItsSet(t *testing.T) {
	for _, tt := range []struct {
		name       string
		etag, lmod string // the source's validators, copied into the file
	}{
		{name: "etag", etag: `"v1"`},
		{name: "last-modified", lmod: "Fri, 31 Dec 1999 22:00:00 GMT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const iss = "https://idp.example/"
				ks := newKeyServer(t, testkeys.JWKS(keyA))
				hold := make(chan struct{}) // the first fetch waits until the loaded set is checked
				ks.set(func(ks *keyServer) { ks.etag, ks.lastModified, ks.block = tt.etag, tt.lmod, hold })
				dir := t.TempDir()
				o := Options{Issuer: iss, URL: ks.URL(), StateDir: dir, MinInterval: 10 * time.Second, DefaultTTL: time.Minute, StaleFor: time.Hour}
				planted := testkeys.JWK{Key: testkeys.Public(testkeys.EC256B), Kid: "x", Alg: "ES256", Use: "sig"}
				b, err := json.Marshal(stateFile{
					Issuer: iss, Source: redact.String(ks.URL()), FetchedAt: t0, Location: (&Fetcher{opts: o}).location(),
					ETag: tt.etag, LastModified: tt.lmod, JWKS: testkeys.JWKS(keyA, planted),
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(statePath(dir, iss, ""), b, 0o600); err != nil {
					t.Fatal(err)
				}
				clk := newBubbleClock()
				f, err := New(testOptions(clk, o))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				clk.f = f
				if _, ok := f.Keys().Load().Lookup("x"); !ok {
					t.Fatal("setup: the state file's set was not loaded")
				}
				close(hold)
				d := clk.waitArmed(t)
				for range 5 { // five refreshes of a healthy IdP
					d = clk.step(t, d)
				}
				set := f.Keys().Load()
				if _, ok := set.Lookup("x"); ok {
					t.Errorf("after %v and %d requests to a healthy IdP (%d answered 304), kid x, which it never published, still verifies; usable until %v",
						clk.Now().Sub(t0), ks.jwksHits.Load(), f.Stats().NotModified, set.UsableUntil)
				}
				if _, ok := set.Lookup("a"); !ok {
					t.Errorf("kid a missing")
				}
			})
		})
	}
}
