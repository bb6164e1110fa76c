package jwks

import (
	"bytes"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// A 304 whose Last-Modified names another date than the If-Modified-Since
// asked about confirms nothing (RFC 9111 §4.3.4: a stored response is
// freshened only by a 304 carrying its own strong validator). The JWKS is
// served as Go's http.FileServer serves a file (http.ServeContent: no ETag,
// Last-Modified in seconds, 304 when the file is not newer than
// If-Modified-Since). The set {a, b} is fetched from a file written an hour
// ago; then the operator removes b (a leaked key) by putting back the
// previous file with its own, older modification time (cp -p, tar, rsync
// -t, a rollback). The server compares dates, so every refresh asking
// If-Modified-Since <the newer date> is answered 304 (with the older
// Last-Modified): the removed key verifies for good, its staleness renewed
// at each refresh, readiness green.
func TestNotModifiedOtherLastModifiedDoesNotPinTheSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		body, modtime := testkeys.JWKS(keyA, keyB), time.Now().Add(-time.Hour)
		var fetches, notModified int
		base := serveInMemory(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			b, m := body, modtime
			fetches++
			mu.Unlock()
			rec := &statusRecorder{ResponseWriter: w}
			http.ServeContent(rec, r, "jwks.json", m, bytes.NewReader(b))
			if rec.status == http.StatusNotModified {
				mu.Lock()
				notModified++
				mu.Unlock()
			}
		}))
		clk := newBubbleClock()
		f, d := startFetcher(t, clk, Options{URL: base + "/jwks.json", MinInterval: 10 * time.Second, DefaultTTL: time.Minute, StaleFor: time.Hour})
		if _, ok := f.Keys().Load().Lookup("b"); !ok {
			t.Fatal("kid b missing after the first fetch")
		}
		mu.Lock()
		body, modtime = testkeys.JWKS(keyA), time.Now().Add(-2*time.Hour) // b removed: the older file is back
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
