package jwks

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// A 304 to a request that carried no If-None-Match, naming an ETag, names
// a representation the fetcher never held: RFC 9111 §4.3.4, a 304 with a
// strong validator updates only a stored response with that validator,
// and the set held came without one. The set {a, b} was served with
// Last-Modified only; the IdP removed b (a leaked key) and began sending
// an ETag, v2. One 304 answered to If-Modified-Since with ETag v2 (a
// lagging edge, as in TestNotModifiedOtherETagDoesNotPinTheSet; Go's
// http.ServeContent leaves Last-Modified out of a 304 that has an ETag)
// must not make v2 the ETag of {a, b}: every later, correct, conditional
// request (If-None-Match: "v2") is answered 304, and b verifies for good,
// its staleness renewed at every refresh.
func TestNotModifiedNamingAnETagNotAskedDoesNotPinTheSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		body, etag := testkeys.JWKS(keyA, keyB), ""
		lastModified := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
		glitch := false // the next conditional request is answered 304 with the current ETag
		var fetches, notModified int
		base := serveInMemory(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			fetches++
			if etag != "" {
				w.Header().Set("ETag", etag)
			}
			inm, ims := r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")
			if (inm != "" && inm == etag) || (glitch && ims != "") {
				glitch = false
				notModified++
				w.WriteHeader(http.StatusNotModified)
				return
			}
			if etag == "" {
				w.Header().Set("Last-Modified", lastModified)
			}
			w.Header().Set("Content-Type", "application/jwk-set+json")
			w.Write(body)
		}))
		clk := newBubbleClock()
		f, d := startFetcher(t, clk, Options{URL: base + "/jwks", MinInterval: 10 * time.Second, DefaultTTL: time.Minute, StaleFor: time.Hour})
		if _, ok := f.Keys().Load().Lookup("b"); !ok {
			t.Fatal("kid b missing after the first fetch")
		}
		mu.Lock()
		body, etag, glitch = testkeys.JWKS(keyA), `"v2"`, true // b removed; one bad 304
		mu.Unlock()
		for range 10 { // ten refreshes, ten minutes
			d = clk.step(t, d)
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := f.Keys().Load().Lookup("b"); ok {
			t.Errorf("after %v and %d fetches (%d answered 304), removed kid b still verifies; set fetched at %v, usable until %v",
				clk.Now().Sub(t0), fetches, notModified, f.Keys().Load().FetchedAt, f.Keys().Load().UsableUntil)
		}
	})
}
