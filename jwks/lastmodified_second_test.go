package jwks

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// A Last-Modified of one-second granularity is no validator for a set
// fetched within the second it names (RFC 9110 §8.8.2.2: a client may
// take it as strong only when the response's Date is at least one second
// after it). The JWKS is served as Go's http.FileServer serves a file
// (http.ServeContent: Last-Modified in seconds, no ETag, 304 when the file
// is not newer than If-Modified-Since in whole seconds). The set {a, b} is
// fetched at 00:00:00.000; at 00:00:00.500 the operator removes b (a leaked
// key). Every later periodic refresh sends If-Modified-Since 00:00:00, is
// answered 304, and renews the set that holds b: the removed key verifies
// for good, its staleness extended at each refresh.
func TestLastModifiedOfTheFetchSecondDoesNotPinTheSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		body, modtime := testkeys.JWKS(keyA, keyB), time.Now()
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
		time.Sleep(500 * time.Millisecond)
		mu.Lock()
		body, modtime = testkeys.JWKS(keyA), time.Now() // b removed, within the second of the fetch
		mu.Unlock()
		d -= 500 * time.Millisecond
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

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// nginx and Apache derive a file's ETag from its modification second and
// its size ("5f3a1c80-2a1"): a key replaced by one of the same length (any
// RSA-2048 or P-256 key under a reused kid) in the second of a fetch keeps
// the ETag, and a conditional refresh is answered 304 for good. A
// Last-Modified within a second of the answer's Date says the file changed
// in that second: its ETag is no validator either. The set {a, b} is
// fetched; half a second later b's kid is given to key C (the same length
// as B's); after the next refreshes kid b must be key C.
func TestMtimeETagOfTheFetchSecondDoesNotPinTheSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		reused := testkeys.JWK{Key: testkeys.Public(testkeys.EC256B), Kid: "b", Alg: "ES256", Use: "sig"}
		body, modtime := testkeys.JWKS(keyA, keyB), time.Now()
		base := serveInMemory(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			b, m := body, modtime
			mu.Unlock()
			// nginx's answer: an ETag of the mtime second and the size,
			// and its If-None-Match comparison.
			etag := fmt.Sprintf(`"%x-%x"`, m.Unix(), len(b))
			w.Header().Set("ETag", etag)
			w.Header().Set("Last-Modified", m.UTC().Format(http.TimeFormat))
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			_, _ = w.Write(b)
		}))
		clk := newBubbleClock()
		f, d := startFetcher(t, clk, Options{URL: base + "/jwks.json", MinInterval: 10 * time.Second, DefaultTTL: time.Minute, StaleFor: time.Hour})
		first, ok := f.Keys().Load().Lookup("b")
		if !ok {
			t.Fatal("kid b missing after the first fetch")
		}
		time.Sleep(500 * time.Millisecond)
		mu.Lock()
		next := testkeys.JWKS(keyA, reused)
		if len(next) != len(body) {
			t.Fatalf("the reused kid's set is %d bytes, the first %d: the ETag would change", len(next), len(body))
		}
		body, modtime = next, time.Now() // within the second of the fetch
		mu.Unlock()
		d -= 500 * time.Millisecond
		for range 3 {
			d = clk.step(t, d)
		}
		if got, ok := f.Keys().Load().Lookup("b"); !ok || got == first {
			t.Errorf("after %v, kid b is still the key the IdP replaced (found: %v)", clk.Now().Sub(t0), ok)
		}
	})
}
