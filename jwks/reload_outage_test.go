package jwks

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
)

// An IdP answering 429 with Retry-After: 30 is not asked again before 30s
// (OPERATIONS: "is not retried before that pause"; DECISIONS: "no sooner
// than the pause"), whatever the jitter draws.
func TestRetryAfterNeverSoonerThanThePause(t *testing.T) {
	for _, j := range []float64{0, 0.25, 0.5, 0.999} {
		synctest.Test(t, func(t *testing.T) {
			ks := newKeyServer(t, testkeys.JWKS(keyA))
			ks.set(func(ks *keyServer) {
				ks.status = http.StatusTooManyRequests
				ks.header.Set("Retry-After", "30")
			})
			clk := newBubbleClock()
			_, d := startFetcher(t, clk, Options{URL: ks.URL(), MinInterval: time.Minute, Jitter: func() float64 { return j }})
			if d < 30*time.Second {
				t.Errorf("jitter %v: retried %v after a Retry-After: 30, before the pause", j, d)
			}
		})
	}
}

// A reload during an IdP outage (a fetcher built with Previous, the
// predecessor serving its last good keys, stale) logs no "jwks issuer
// ready": the issuer is not ready (OPERATIONS: ready is logged once, when
// the issuer first has usable keys), and its eventual first success is
// "jwks issuer recovered" (the line log-based alerting resolves on), with
// failed_for counted from the outage's start.
func TestReloadDuringOutageKeepsTheTransitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const iss = "https://idp.reload.test/"
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		buf := new(testlog.Buffer)
		log := slog.New(slog.NewJSONHandler(buf, nil))
		o := Options{Issuer: iss, URL: ks.URL(), MinInterval: 10 * time.Second, DefaultTTL: 30 * time.Second, StaleFor: time.Hour, Logger: log}
		prev, d := startFetcher(t, clk, o)
		ks.set(func(ks *keyServer) { ks.status = http.StatusServiceUnavailable })
		d = clk.step(t, d) // stale
		_ = d
		next := o
		next.MinInterval = 5 * time.Second // a refresh setting changed: a new fetcher
		next.Previous = prev
		f, d2 := startFetcher(t, clk, next)
		prev.Close()
		ks.set(func(ks *keyServer) { ks.status = 0 })
		clk.step(t, d2)
		if st := f.Keys().Status(); st.ConsecutiveFailures != 0 {
			t.Fatalf("not recovered: %+v", st)
		}
		var got []string
		for _, l := range testlog.Lines(t, buf) {
			if msg := l["msg"].(string); strings.HasPrefix(msg, "jwks issuer ") {
				got = append(got, msg)
			}
		}
		want := []string{"jwks issuer ready", "jwks issuer stale: serving the last good keys", "jwks issuer recovered"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("transitions %q, want %q", got, want)
		}
	})
}
