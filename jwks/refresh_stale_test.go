package jwks

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// A healthy IdP never leaves the issuer without usable keys: whatever the
// response's caching headers grant (a max-age of a week, clamped to
// MaxInterval), the next refresh is scheduled before the set goes stale,
// with room for retries, even when StaleFor is shorter than MaxInterval or
// jitter lengthens the interval.
func TestFetcherRefreshBeforeStale(t *testing.T) {
	tests := []struct {
		name     string
		header   string
		jitter   float64
		opts     Options
		wantNext time.Duration // the refresh interval, ±0% jitter unless jitter is set
	}{
		{name: "defaults-max-age-week-jitter-high", header: "max-age=604800", jitter: 0.999999,
			wantNext: DefaultStaleFor / 2 * 11 / 10},
		{name: "stale-for-below-max-interval", header: "max-age=86400",
			opts: Options{StaleFor: time.Hour}, wantNext: 30 * time.Minute},
		{name: "stale-for-below-default-ttl", opts: Options{StaleFor: 10 * time.Minute}, wantNext: 5 * time.Minute},
		{name: "stale-for-below-min-interval", header: "max-age=300",
			opts: Options{StaleFor: 30 * time.Second}, wantNext: 15 * time.Second},
		{name: "max-age-within-half", header: "max-age=300", opts: Options{StaleFor: time.Hour}, wantNext: 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, testkeys.JWKS(keyA))
				if tt.header != "" {
					ks.set(func(ks *keyServer) { ks.header.Set("Cache-Control", tt.header) })
				}
				clk := newBubbleClock()
				o := tt.opts
				o.URL = ks.URL()
				jitter := cmpOr(tt.jitter, 0.5)
				o.Jitter = func() float64 { return jitter }
				f, d := startFetcher(t, clk, o)
				if d.Round(time.Second) != tt.wantNext.Round(time.Second) {
					t.Errorf("refresh interval = %v, want %v", d, tt.wantNext)
				}
				// Up to the moment the refresh fires, the set verifies.
				clk.Advance(d - time.Nanosecond)
				if now := clk.Now(); !f.Keys().Load().Usable(now) {
					t.Fatalf("at +%v, just before the scheduled refresh: Usable() = false (UsableUntil %v); a healthy IdP left the issuer without keys",
						now.Sub(t0), f.Keys().Load().UsableUntil.Sub(t0))
				}
				clk.step(t, time.Nanosecond)
				if now := clk.Now(); !f.Keys().Load().Usable(now) || f.Stats().Fetches != 2 {
					t.Errorf("after the refresh at +%v: Usable() = false or %d fetches, want usable after 2", now.Sub(t0), f.Stats().Fetches)
				}
				if err := f.Ready(context.Background()); err != nil {
					t.Errorf("Ready() = %v", err)
				}
			})
		})
	}
}

func cmpOr(a, b float64) float64 {
	if a != 0 {
		return a
	}
	return b
}
