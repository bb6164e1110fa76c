package jwks

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// An IdP shedding load (429 or 503 with Retry-After) is not asked again
// before the pause it asked for, within the backoff's ceiling
// (MinInterval); without Retry-After, or with one that does not parse, the
// backoff starts at 1s as before.
func TestFetcherRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		want       time.Duration // the retry delay after the failure, ±0% jitter
	}{
		{name: "429-seconds", status: http.StatusTooManyRequests, retryAfter: "30", want: 30 * time.Second},
		{name: "503-seconds", status: http.StatusServiceUnavailable, retryAfter: "20", want: 20 * time.Second},
		{name: "429-date", status: http.StatusTooManyRequests, retryAfter: t0.Add(45 * time.Second).Format(http.TimeFormat), want: 45 * time.Second},
		{name: "429-beyond-min-interval", status: http.StatusTooManyRequests, retryAfter: "3600", want: time.Minute},
		{name: "429-shorter-than-backoff", status: http.StatusTooManyRequests, retryAfter: "0", want: time.Second},
		{name: "429-without", status: http.StatusTooManyRequests, want: time.Second},
		{name: "500-without", status: http.StatusInternalServerError, want: time.Second},
		{name: "429-unparsable", status: http.StatusTooManyRequests, retryAfter: "soon", want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, testkeys.JWKS(keyA))
				ks.set(func(ks *keyServer) {
					ks.status = tt.status
					if tt.retryAfter != "" {
						ks.header.Set("Retry-After", tt.retryAfter)
					}
				})
				clk := newBubbleClock()
				f, d := startFetcher(t, clk, Options{URL: ks.URL(), MinInterval: time.Minute})
				if d != tt.want {
					t.Errorf("retry after the failure in %v, want %v", d, tt.want)
				}
				if st := f.Keys().Status(); !st.NextRefresh.Equal(t0.Add(d)) || st.ConsecutiveFailures != 1 {
					t.Errorf("Status() = %+v, want 1 failure and the next attempt at +%v", st, d)
				}
			})
		})
	}
}
