package jwks

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// An unknown-kid refresh asks for the whole set, without validators: a
// token names a kid the set lacks, which is evidence the set changed, and a
// source whose validator did not change with its body (a Last-Modified of
// one-second granularity when the key was added in the second of the last
// fetch, an ETag not derived from the content) would otherwise answer 304
// for ever and keep the new key out. Periodic refreshes stay conditional.
func TestRefreshUnknownKidUnconditional(t *testing.T) {
	tests := []struct {
		name, etag, lastModified string
	}{
		{name: "etag-unchanged", etag: `"v1"`},
		{name: "last-modified-same-second", lastModified: "Fri, 31 Dec 1999 00:00:00 GMT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, testkeys.JWKS(keyA))
				ks.set(func(ks *keyServer) { ks.etag, ks.lastModified = tt.etag, tt.lastModified })
				clk := newBubbleClock()
				f, d := startFetcher(t, clk, Options{URL: ks.URL()})

				// The key is added; the validator stays what it was.
				ks.setBody(testkeys.JWKS(keyA, keyB))
				clk.step(t, d) // a periodic refresh: conditional, 304
				if s := f.Stats(); s.NotModified != 1 {
					t.Fatalf("periodic refresh: Stats() = %+v, want 1 not modified (conditional)", s)
				}
				if err := f.RefreshUnknownKid(context.Background(), "b"); err != nil {
					t.Fatalf("RefreshUnknownKid(b) = %v, want nil", err)
				}
				clk.waitArmed(t)
				if _, ok := f.Keys().Load().Lookup("b"); !ok {
					t.Errorf("after the unknown-kid refresh: kid b missing (request If-None-Match %q, If-Modified-Since %q)",
						ks.requestHeader().Get("If-None-Match"), ks.requestHeader().Get("If-Modified-Since"))
				}
				if s := f.Stats(); s.Fetches != 3 || s.UnknownKidRefreshes != 1 || s.NotModified != 1 {
					t.Errorf("Stats() = %+v, want 3 fetches, 1 unknown-kid refresh, 1 not modified", s)
				}
			})
		})
	}
}
