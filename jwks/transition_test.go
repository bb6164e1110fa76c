package jwks

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
)

// observed is what /metrics exports of keys at now (server/metrics reads
// the same Status and set; this package cannot import it: server/metrics
// imports introspect, which imports jwks).
func observed(keys *cache.Keys, now time.Time) map[string]string {
	set, st := keys.Load(), keys.Status()
	ready := "0"
	if set.Usable(now) {
		ready = "1"
	}
	return map[string]string{
		"issuer_ready":              ready,
		"jwks_consecutive_failures": strconv.Itoa(st.ConsecutiveFailures),
		"jwks_fetch_errors_total":   strconv.FormatUint(st.Stats.Errors, 10),
		"jwks_fetches_total":        strconv.FormatUint(st.Stats.Fetches, 10),
	}
}

// TestTransitionLogs drives an issuer through ready → stale → unusable →
// recovered on the fetcher's clock and checks that each transition is
// logged exactly once, at its level, naming the issuer, that the failures
// in between stay "jwks fetch failed" warnings with their count, and what
// /metrics says at each step (the Status and set it exports).
func TestTransitionLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const issuer = "https://idp.transition.test/"
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		clk := newBubbleClock()
		buf := new(testlog.Buffer)
		const staleFor = time.Minute
		f, d := startFetcher(t, clk, Options{
			Issuer: issuer, URL: ks.URL(), MinInterval: 10 * time.Second, DefaultTTL: 30 * time.Second, StaleFor: staleFor,
			Logger: slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})

		type want struct {
			msg, level string
			metrics    map[string]string
		}
		steps := []struct {
			name    string
			status  int // the IdP's answer from now on; 0 = the JWKS
			advance bool
			until   func() bool // advance the clock until it holds
			want    want
		}{
			{name: "ready", want: want{"jwks issuer ready", "INFO",
				map[string]string{"issuer_ready": "1", "jwks_consecutive_failures": "0", "jwks_fetch_errors_total": "0", "jwks_fetches_total": "1"}}},
			{name: "stale", status: http.StatusServiceUnavailable, advance: true, want: want{"jwks issuer stale: serving the last good keys", "WARN",
				map[string]string{"issuer_ready": "1", "jwks_consecutive_failures": "1", "jwks_fetch_errors_total": "1"}}},
			{name: "unusable", status: http.StatusServiceUnavailable, advance: true,
				until: func() bool { return clk.Now().After(t0.Add(staleFor)) },
				want:  want{"jwks issuer unusable: tokens answered keys_unavailable", "ERROR", map[string]string{"issuer_ready": "0"}}},
			{name: "recovered", status: 0, advance: true, want: want{"jwks issuer recovered", "INFO",
				map[string]string{"issuer_ready": "1", "jwks_consecutive_failures": "0"}}},
		}
		seen := 0 // log lines already checked
		for _, st := range steps {
			ks.set(func(ks *keyServer) { ks.status = st.status })
			if st.advance {
				d = clk.step(t, d)
				for st.until != nil && !st.until() {
					d = clk.step(t, d)
				}
			}
			lines := testlog.Lines(t, buf)
			var transitions, failures []map[string]any
			for _, l := range lines[seen:] {
				switch msg := l["msg"].(string); {
				case strings.HasPrefix(msg, "jwks issuer "):
					transitions = append(transitions, l)
				case msg == "jwks fetch failed":
					failures = append(failures, l)
				}
			}
			seen = len(lines)
			if len(transitions) != 1 || transitions[0]["msg"] != st.want.msg {
				t.Fatalf("%s: transition lines %v, want exactly one %q", st.name, transitions, st.want.msg)
			}
			if l := transitions[0]; l["level"] != st.want.level || l["issuer"] != issuer {
				t.Errorf("%s: line %v, want level %s and issuer %s", st.name, l, st.want.level, issuer)
			}
			for _, fl := range failures {
				if fl["level"] != "WARN" || fl["failures"] == nil || fl["issuer"] != issuer {
					t.Errorf("%s: failure line %v, want a warning with its count and the issuer", st.name, fl)
				}
			}
			if st.name == "unusable" && len(failures) < 2 {
				t.Errorf("unusable: %d failure warnings on the way, want one per failed attempt (several)", len(failures))
			}
			got := observed(f.Keys(), clk.Now())
			for k, w := range st.want.metrics {
				if got[k] != w {
					t.Errorf("%s: %s = %q, want %s", st.name, k, got[k], w)
				}
			}
		}
		// Another good refresh and another outage: a success repeats no line;
		// the next failure is a new stale transition.
		d = clk.step(t, d)
		ks.set(func(ks *keyServer) { ks.status = http.StatusBadGateway })
		clk.step(t, d)
		var again []string
		for _, l := range testlog.Lines(t, buf)[seen:] {
			if msg := l["msg"].(string); strings.HasPrefix(msg, "jwks issuer ") {
				again = append(again, msg)
			}
		}
		if len(again) != 1 || again[0] != "jwks issuer stale: serving the last good keys" {
			t.Errorf("after recovery, a refresh and a failure: transitions %q, want one stale", again)
		}
	})
}

// TestTransitionColdStart: an issuer whose source fails from the start is
// unusable once (however many attempts fail), and its first success is
// "ready", not "recovered".
func TestTransitionColdStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		ks.set(func(ks *keyServer) { ks.status = http.StatusInternalServerError })
		clk := newBubbleClock()
		buf := new(testlog.Buffer)
		f, d := startFetcher(t, clk, Options{
			Issuer: "https://cold.test/", URL: ks.URL(), MinInterval: 10 * time.Second,
			Logger: slog.New(slog.NewJSONHandler(buf, nil)),
		})
		for range 4 {
			d = clk.step(t, d)
		}
		ks.set(func(ks *keyServer) { ks.status = 0 })
		clk.step(t, d)
		if err := f.Ready(t.Context()); err != nil {
			t.Fatal(err)
		}
		var got []string
		failures := 0
		for _, l := range testlog.Lines(t, buf) {
			switch msg := l["msg"].(string); {
			case strings.HasPrefix(msg, "jwks issuer "):
				got = append(got, msg)
			case msg == "jwks fetch failed":
				failures++
			}
		}
		want := []string{"jwks issuer unusable: tokens answered keys_unavailable", "jwks issuer ready"}
		if strings.Join(got, "|") != strings.Join(want, "|") || failures != 5 {
			t.Errorf("transitions %q and %d failure warnings, want %q and 5", got, failures, want)
		}
	})
}
