package service

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
)

// TestSignalsAcrossReloads: a reload that does not change ssf.poll keeps
// its poller (no second poller polls the same stream), one that changes it
// replaces it, one that removes it closes it; the jtis used before a reload
// stay used after it; Close stops every poller (TestMain's goleak holds it).
func TestSignalsAcrossReloads(t *testing.T) {
	jwksSrv := jwksServer(t)
	var polls atomic.Int64
	tx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		polls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sets":{}}`))
	}))
	t.Cleanup(tx.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	load := func(ssf string) *config.Plan {
		t.Helper()
		return writePlan(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
state_dir: %s
revocation: {store: memory}
issuers:
  - issuer: https://idp.example/
    jwks_url: %s
    backchannel_logout: {audiences: [web-app]}
%s`, filepath.Join(dir, "state"), jwksSrv.URL, ssf))
	}
	poll := func(interval string) string {
		return fmt.Sprintf("    ssf: {audiences: [a], poll: {url: %q, interval: %s}}\n", tx.URL, interval)
	}
	l := startLive(t, load(poll("1h")))
	ctx := context.Background()
	pollers := func() []*poller {
		l.signals.mu.Lock()
		defer l.signals.mu.Unlock()
		return append([]*poller(nil), l.signals.pollers...)
	}
	// waitPolls waits until the transmitter has seen n polls (each poller
	// polls once when it starts, then every hour).
	waitPolls := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for polls.Load() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := polls.Load(); got != n {
			t.Fatalf("the transmitter saw %d polls, want %d (one per poller started)", got, n)
		}
	}
	waitPolls(1)
	first := pollers()
	if len(first) != 1 {
		t.Fatalf("pollers = %d, want 1", len(first))
	}
	// The receiver's jti store: a key used now stays used after reloads.
	r := l.Server().Signals()
	if r == nil {
		t.Fatal("no signals receiver")
	}
	used := [32]byte{7}
	if fresh, err := l.signals.memory.Use(ctx, used, time.Hour, time.Now()); !fresh || err != nil {
		t.Fatalf("Use() = %t, %v", fresh, err)
	}

	mustReload(t, l, ctx, load(poll("1h")))
	if got := pollers(); len(got) != 1 || got[0] != first[0] {
		t.Errorf("an unchanged reload replaced the poller")
	}
	mustReload(t, l, ctx, load(poll("59m")))
	second := pollers()
	if len(second) != 1 || second[0] == first[0] {
		t.Errorf("a changed interval kept the old poller")
	}
	if fresh, _ := l.signals.memory.Use(ctx, used, time.Hour, time.Now()); fresh {
		t.Error("a reload forgot a used jti")
	}
	waitPolls(2) // the kept poller did not start again
	mustReload(t, l, ctx, load(""))
	if got := pollers(); len(got) != 0 {
		t.Errorf("pollers after removing ssf = %d, want 0", len(got))
	}
}

// TestSignalsOwnMemoryStore: without Redis, the signal jtis (kept a day)
// do not go to the DPoP memory store, whose purge in order of use they
// would hold back until it filled and refused proofs.
func TestSignalsOwnMemoryStore(t *testing.T) {
	jwksSrv := jwksServer(t)
	dir := t.TempDir()
	l := startLive(t, writePlan(t, filepath.Join(dir, "config.yaml"), fmt.Sprintf(`listen: 127.0.0.1:0
state_dir: %s
revocation: {store: memory}
dpop: {replay_store: memory}
issuers:
  - issuer: https://idp.example/
    jwks_url: %s
    sender_constraint: {dpop: optional}
    backchannel_logout: {audiences: [web-app]}
`, filepath.Join(dir, "state"), jwksSrv.URL)))
	if l.Server().Signals() == nil || l.replayStore == nil {
		t.Fatal("want a signals receiver and a DPoP replay store")
	}
	if l.signals.memory == nil || any(l.signals.memory) == any(l.replayStore) {
		t.Errorf("signal jtis in %p, DPoP proofs in %p: want a memory store of their own", l.signals.memory, l.replayStore)
	}
}

// TestSignalPollsCounted: the service's pollers count their polls in
// jwksverify_ssf_polls_total: a poller that every transmitter answer failed
// (here a 401, an expired bearer token) showed it in its log lines only.
func TestSignalPollsCounted(t *testing.T) {
	jwksSrv := jwksServer(t)
	for _, tc := range []struct {
		name   string
		status int
		want   string
	}{
		{"transmitter-refuses", http.StatusUnauthorized, `jwksverify_ssf_polls_total{issuer="https://idp.example/",result="failure"} 1`},
		{"transmitter-answers", http.StatusOK, `jwksverify_ssf_polls_total{issuer="https://idp.example/",result="success"} 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(`{"sets":{}}`))
			}))
			t.Cleanup(tx.Close)
			dir := t.TempDir()
			l := startLive(t, writePlan(t, filepath.Join(dir, "config.yaml"), fmt.Sprintf(`listen: 127.0.0.1:0
state_dir: %s
revocation: {store: memory}
issuers:
  - issuer: https://idp.example/
    jwks_url: %s
    ssf: {audiences: [a], poll: {url: %q, interval: 1h}}
`, filepath.Join(dir, "state"), jwksSrv.URL, tx.URL)))
			// The poller polls once when it starts, then every hour (or
			// after its backoff): wait for that poll to be counted.
			deadline := time.Now().Add(10 * time.Second)
			var body string
			for time.Now().Before(deadline) {
				w := httptest.NewRecorder()
				l.Metrics().Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if body = w.Body.String(); strings.Contains(body, tc.want+"\n") {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Errorf("/metrics lacks %s:\n%s", tc.want, grepLines(body, "ssf_polls"))
		})
	}
}

// TestSignalPollFailingFollowsReloads: jwksverify_ssf_poll_failing is 1
// while an issuer's polls fail, 0 once its poller was replaced by one that
// succeeds, and has no series once a reload removed the issuer's ssf.poll:
// a stream no longer polled must not keep JWKSVerifySETPollFailing firing.
func TestSignalPollFailingFollowsReloads(t *testing.T) {
	jwksSrv := jwksServer(t)
	var status atomic.Int32
	status.Store(http.StatusUnauthorized)
	tx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte(`{"sets":{}}`))
	}))
	t.Cleanup(tx.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	plan := func(poll string) *config.Plan {
		return writePlan(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
state_dir: %s
revocation: {store: memory}
issuers:
  - issuer: https://idp.example/
    jwks_url: %s
    ssf: {audiences: [a]%s}
`, filepath.Join(dir, "state"), jwksSrv.URL, poll))
	}
	const series = `jwksverify_ssf_poll_failing{issuer="https://idp.example/"}`
	l := startLive(t, plan(fmt.Sprintf(", poll: {url: %q, interval: 1h}", tx.URL)))
	scrape := func() string {
		w := httptest.NewRecorder()
		l.Metrics().Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return w.Body.String()
	}
	// waitFor waits for the series to read want ("" for no series); the
	// poller polls once when it starts, then every hour.
	waitFor := func(step, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		var got string
		for time.Now().Before(deadline) {
			got = ""
			for line := range strings.SplitSeq(scrape(), "\n") {
				if v, ok := strings.CutPrefix(line, series+" "); ok {
					got = v
				}
			}
			if got == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s: %s = %q, want %q", step, series, got, want)
	}
	waitFor("transmitter refuses", "1")
	status.Store(http.StatusOK)
	// Another interval is another poller, which polls at once.
	mustReload(t, l, context.Background(), plan(fmt.Sprintf(", poll: {url: %q, interval: 30m}", tx.URL)))
	waitFor("replaced by one that succeeds", "0")
	status.Store(http.StatusUnauthorized)
	mustReload(t, l, context.Background(), plan(fmt.Sprintf(", poll: {url: %q, interval: 20m}", tx.URL)))
	waitFor("failing again", "1")
	mustReload(t, l, context.Background(), plan(""))
	waitFor("ssf.poll removed", "")
	mustReload(t, l, context.Background(), plan(fmt.Sprintf(", poll: {url: %q, interval: 10m}", tx.URL)))
	waitFor("polled and failing again", "1")
	// A program embedding the service may serve /metrics after Close:
	// nothing is polled then.
	if err := l.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	waitFor("closed", "")
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
