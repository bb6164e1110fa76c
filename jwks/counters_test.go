package jwks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// The counters that Keys().Status() reports (and /metrics and /v1/issuers
// export) are the live ones: right after a storm of suppressed refreshes,
// with no fetch attempt since, they equal Stats() and count every request.
func TestFetcherLiveCounters(t *testing.T) {
	tests := []struct {
		name    string
		kid     func(i int) string
		wantNeg uint64
	}{
		{name: "random-kids", kid: func(i int) string { return fmt.Sprintf("random-%d", i) }},
		{name: "remembered-kid", kid: func(int) string { return "x" }, wantNeg: 1000},
		{name: "mixed", kid: func(i int) string {
			if i%2 == 0 {
				return "x"
			}
			return fmt.Sprintf("random-%d", i)
		}, wantNeg: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, testkeys.JWKS(keyA))
				clk := newBubbleClock()
				f, _ := startFetcher(t, clk, Options{URL: ks.URL()})
				if err := f.RefreshUnknownKid(context.Background(), "x"); err != nil {
					t.Fatalf("RefreshUnknownKid(x) = %v, want nil (the refresh that spends the budget)", err)
				}
				clk.waitArmed(t) // the refresh's attempt is published: none follows

				const n = 1000
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						if err := f.RefreshUnknownKid(context.Background(), tt.kid(i)); !errors.Is(err, ErrSuppressed) {
							t.Errorf("RefreshUnknownKid() = %v, want %v", err, ErrSuppressed)
						}
					})
				}
				wg.Wait()

				want := cache.FetchStats{Fetches: 2, UnknownKidRefreshes: 1, SuppressedRefreshes: n, NegativeKidHits: tt.wantNeg}
				if got := f.Keys().Status().Stats; got != want {
					t.Errorf("Keys().Status().Stats = %+v, want %+v", got, want)
				}
				if got := f.Stats(); got != want {
					t.Errorf("Stats() = %+v, want %+v", got, want)
				}
			})
		})
	}
}

// Counters given by the caller's Keys are the ones the fetcher counts in:
// one owner, whoever reads.
func TestFetcherCountsIntoCallersKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		keys := new(cache.Keys)
		f, _ := startFetcher(t, newBubbleClock(), Options{URL: ks.URL(), Keys: keys})
		if f.Keys() != keys {
			t.Fatal("Keys() is not the caller's cache.Keys")
		}
		if got := keys.Counters().Fetches.Load(); got != 1 {
			t.Errorf("caller's Counters().Fetches = %d, want 1", got)
		}
	})
}
