package jwks

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// A fetcher that replaces another (Options.Previous, a reload) starts from
// its predecessor's last good set when both read the same source for the
// same issuer — validators and fetch time included, bounded by its own
// StaleFor — and from nothing otherwise: another source, another issuer, a
// set past the new StaleFor, or more keys than the new MaxKeys.
func TestFetcherPrevious(t *testing.T) {
	const iss = "https://idp.example/"
	tests := []struct {
		name     string
		change   func(o *Options, ks, other *keyServer)
		advance  time.Duration // between the predecessor's fetch and New
		wantKeys int           // 0: nothing inherited
	}{
		{name: "same-source-new-stale-for", change: func(o *Options, _, _ *keyServer) { o.StaleFor = 48 * time.Hour }, wantKeys: 2},
		{name: "same-source-new-min-interval", change: func(o *Options, _, _ *keyServer) { o.MinInterval = 2 * time.Minute }, wantKeys: 2},
		{name: "other-url", change: func(o *Options, _, other *keyServer) { o.URL = other.URL() }},
		{name: "other-query", change: func(o *Options, ks, _ *keyServer) { o.URL = ks.URL() + "?tenant=b" }},
		{name: "other-issuer", change: func(o *Options, _, _ *keyServer) { o.Issuer = "https://other.example/" }},
		{name: "past-new-stale-for", change: func(o *Options, _, _ *keyServer) { o.StaleFor = time.Hour }, advance: 2 * time.Hour},
		{name: "over-new-max-keys", change: func(o *Options, _, _ *keyServer) { o.MaxKeys = 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, testkeys.JWKS(keyA, keyB))
				ks.set(func(ks *keyServer) { ks.etag = `"v1"` })
				other := newKeyServer(t, testkeys.JWKS(keyC))
				clk := newBubbleClock()
				o := Options{Issuer: iss, URL: ks.URL(), StaleFor: 24 * time.Hour}
				prev, _ := startFetcher(t, clk, o)
				prevSet := prev.Keys().Load()

				// The source is down from now on: the predecessor's own
				// refreshes while the clock advances fail too, so its last
				// good set stays the one fetched at t0.
				ks.set(func(ks *keyServer) { ks.status = http.StatusServiceUnavailable })
				other.set(func(ks *keyServer) { ks.status = http.StatusServiceUnavailable })
				clk.Advance(tt.advance)
				next := o
				tt.change(&next, ks, other)
				next.Previous = prev
				f, _ := startFetcher(t, clk, next)
				if f.opts.Previous != nil {
					t.Errorf("the fetcher keeps its predecessor (opts.Previous): a chain of reloads would pin every old fetcher")
				}
				set := f.Keys().Load()
				if tt.wantKeys == 0 {
					if set != nil && set.Len() > 0 {
						t.Errorf("inherited %d keys, want none", set.Len())
					}
					return
				}
				now := clk.Now()
				if set == nil || set.Len() != tt.wantKeys || !set.Usable(now) {
					t.Fatalf("set = %v, want the predecessor's %d keys, usable", set, tt.wantKeys)
				}
				if a, _ := set.Lookup("a"); a == nil || !set.FetchedAt.Equal(prevSet.FetchedAt) || !set.UsableUntil.Equal(prevSet.FetchedAt.Add(next.StaleFor)) {
					t.Errorf("set FetchedAt %v UsableUntil %v, want %v and that + %v", set.FetchedAt, set.UsableUntil, prevSet.FetchedAt, next.StaleFor)
				}
				// The source is back: the predecessor's validator makes the
				// next fetch a conditional one, answered 304.
				ks.set(func(ks *keyServer) { ks.status = 0 })
				clk.step(t, time.Minute)
				if got := ks.requestHeader().Get("If-None-Match"); got != `"v1"` {
					t.Errorf("next fetch If-None-Match = %q, want the predecessor's validator", got)
				}
				if s := f.Stats(); s.NotModified != 1 {
					t.Errorf("Stats() = %+v, want 1 not modified", s)
				}
			})
		})
	}
}

// A replacement of a discovery fetcher also keeps what its predecessor
// discovered — the jwks_uri and the introspection_endpoint — so that while
// the discovery document is down it still refreshes the keys from the
// jwks_uri, and an issuer's introspection keeps its endpoint.
func TestFetcherPreviousDiscovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		ks.set(func(ks *keyServer) {
			ks.discovery = []byte(`{"issuer":"` + ks.base + `","jwks_uri":"` + ks.URL() + `","introspection_endpoint":"` + ks.base + `/introspect"}`)
		})
		clk := newBubbleClock()
		o := Options{Issuer: ks.base, Discovery: true}
		prev, _ := startFetcher(t, clk, o)
		if got := prev.IntrospectionEndpoint(); got != ks.base+"/introspect" {
			t.Fatalf("IntrospectionEndpoint() = %q", got)
		}
		ks.set(func(ks *keyServer) { ks.discoveryStatus = http.StatusServiceUnavailable })
		next := o
		next.StaleFor, next.Previous = 48*time.Hour, prev
		clk.Advance(time.Minute)
		f, _ := startFetcher(t, clk, next)
		if got := f.IntrospectionEndpoint(); got != ks.base+"/introspect" {
			t.Errorf("replacement: IntrospectionEndpoint() = %q, want the predecessor's", got)
		}
		if st := f.Keys().Status(); !st.LastSuccess.Equal(clk.Now()) || st.LastError != "" {
			t.Errorf("replacement's first attempt with discovery down: Status() = %+v, want a success from the known jwks_uri", st)
		}
	})
}

// TestFetcherPreviousInsecureJWKSURI: a discovered plain-http jwks_uri of a
// predecessor that allowed it is not carried over to a replacement that
// does not: the transport rule applies again, as to a state file's.
func TestFetcherPreviousInsecureJWKSURI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const insecure = "http://idp.example.com/jwks"
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		o := Options{Issuer: ks.base, Discovery: true, InsecureAllowHTTP: true}
		prev, _ := startFetcher(t, clk, o)
		prev.mu.Lock()
		prev.st.jwksURL = insecure // what an http discovery document named
		prev.mu.Unlock()
		ks.set(func(ks *keyServer) { ks.discoveryStatus = http.StatusServiceUnavailable })
		// One bubble for both (t.Run cannot run inside it).
		for _, allow := range []bool{false, true} {
			f, err := New(testOptions(clk, Options{Issuer: o.Issuer, Discovery: true, InsecureAllowHTTP: allow, Previous: prev}))
			if err != nil {
				t.Fatalf("allow_insecure_http=%t: %v", allow, err)
			}
			f.Close() // New inherited; no attempt is needed to see what
			f.mu.Lock()
			got := f.st.jwksURL
			f.mu.Unlock()
			if kept := got == insecure; kept != allow {
				t.Errorf("allow_insecure_http=%t: jwks_uri carried over = %t (%q), want %t", allow, kept, got, allow)
			}
		}
	})
}
