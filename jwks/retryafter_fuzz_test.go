package jwks

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzRetryAfter feeds arbitrary Retry-After values (an IdP's or an
// authorization server's answer) to RetryAfter: never a negative delay
// nor one past the cap; delay-seconds read as strconv reads them, an
// HTTP-date as net/http reads it; anything else none.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"120", "0", "-5", "+7", " 30 ", "99999999999999999999", "Wed, 21 Oct 2015 07:28:00 GMT",
		"Mon, 30 Nov 2026 12:01:00 GMT", "Monday, 30-Nov-26 12:01:00 GMT", "Mon Nov 30 12:01:00 2026", "1.5", "0x10", "", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"Retry-After": {v}}
		d, ok := RetryAfter(h, now)
		if !ok {
			if d != 0 {
				t.Fatalf("RetryAfter(%q) = %v, false", v, d)
			}
			return
		}
		if d < 0 || d > maxCacheAge {
			t.Fatalf("RetryAfter(%q) = %v, want within [0, %v]", v, d, maxCacheAge)
		}
		tv := strings.TrimSpace(v)
		if secs, err := strconv.ParseInt(tv, 10, 64); err == nil {
			if want := min(time.Duration(max(secs, 0))*time.Second, maxCacheAge); secs < int64(maxCacheAge/time.Second) && d != want {
				t.Fatalf("RetryAfter(%q) = %v, want %v", v, d, want)
			}
			return
		}
		at, err := http.ParseTime(tv)
		if err != nil {
			t.Fatalf("RetryAfter(%q) = %v, true; neither delay-seconds nor an HTTP-date", v, d)
		}
		if want := min(max(at.Sub(now), 0), maxCacheAge); d != want {
			t.Fatalf("RetryAfter(%q) = %v, want %v", v, d, want)
		}
	})
}
