package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// The refresh settings of the outage tests: a 4s refresh interval (so that
// the backoff 1s, 2s, 4s has room to grow: it is capped at min_interval),
// stale_for 6s, and a 1s fetch timeout that bounds hanging and dripping
// answers.
var outageRefresh = rhRefresh{
	minInterval:  4 * time.Second,
	maxInterval:  4 * time.Second,
	defaultTTL:   4 * time.Second,
	unknownKid:   time.Second,
	staleFor:     6 * time.Second,
	fetchTimeout: time.Second,
}

// outageMargin absorbs scheduling on a loaded 2-core machine around the
// instants the tests predict (the end of stale_for, a retry).
const outageMargin = 500 * time.Millisecond

// backoffStep is the n-th retry delay (n from 1) the SPEC prescribes before
// jitter: 1s, 2s, 4s, … capped at min_interval.
func backoffStep(n int, minInterval time.Duration) time.Duration {
	d := time.Second << min(n-1, 30)
	return min(d, minInterval)
}

// maxAttempts is the most attempts a fetcher can make in elapsed time after
// its first failure, every delay at its shortest (-10% jitter).
func maxAttempts(elapsed, minInterval time.Duration) int {
	n, at := 1, time.Duration(0)
	for {
		at += time.Duration(float64(backoffStep(n, minInterval)) * 0.9)
		if at > elapsed {
			return n
		}
		n++
	}
}

// minAttempts is the fewest attempts in elapsed time after the first
// failure, every delay at its longest (+10%) plus cost per attempt and the
// margin.
func minAttempts(elapsed, minInterval, cost time.Duration) int {
	n, at := 1, time.Duration(0)
	for {
		at += time.Duration(float64(backoffStep(n, minInterval))*1.1) + cost + outageMargin
		if at > elapsed {
			return n
		}
		n++
	}
}

// TestResilienceOutage breaks the IdP in each way below after the service
// has fetched a good set, and checks on the real binary: the last good set
// keeps verifying (fresh tokens and cached verdicts) for stale_for counted
// from the last successful fetch; the retries are spaced by the backoff
// (1s, 2s, 4s, capped at min_interval; counted at the IdP); past stale_for
// every verify is 503 keys_unavailable and /readyz is 503; once the IdP
// heals, the service is ready again without a restart. No request fails in
// any other way, and none is lost.
func TestResilienceOutage(t *testing.T) {
	t.Parallel()
	key := rhKey{testkeys.EC256A, "out-a", "ES256"}
	steady := func(b behaviour) func(*testing.T, *fakeIdP) {
		return func(_ *testing.T, p *fakeIdP) { p.SetBehaviour(b) }
	}
	tests := []struct {
		name  string
		fault func(*testing.T, *fakeIdP)
		heal  func(*testing.T, *fakeIdP) // nil: back to serveOK
		// unseen: the IdP sees no request per attempt (connection refused);
		// attempts are counted from the service's metrics instead.
		unseen bool
		// cost is how long one failing attempt lasts at most.
		cost time.Duration
		// wantErr are substrings of which /v1/issuers' last_error must hold one.
		wantErr []string
	}{
		{name: "status-500", fault: steady(behaviour{kind: serveStatus, status: 500}), wantErr: []string{"500"}},
		{name: "status-503-slow", fault: steady(behaviour{kind: serveStatus, status: 503, delay: 300 * time.Millisecond}), cost: 300 * time.Millisecond, wantErr: []string{"503"}},
		{name: "timeout", fault: steady(behaviour{kind: serveHang}), cost: outageRefresh.fetchTimeout, wantErr: []string{"deadline", "timeout"}},
		{name: "connection-refused", fault: func(_ *testing.T, p *fakeIdP) { p.Down() }, heal: func(t *testing.T, p *fakeIdP) { p.Up(t) },
			unseen: true, wantErr: []string{"refused"}},
		{name: "tls-untrusted-certificate", fault: steady(behaviour{kind: serveRedirectTLS}), wantErr: []string{"certificate", "x509", "tls"}},
		{name: "connection-closed", fault: steady(behaviour{kind: serveClose}), wantErr: []string{"EOF", "reset", "closed"}},
		{name: "truncated-body", fault: steady(behaviour{kind: serveTruncated}), wantErr: []string{"EOF"}},
		{name: "invalid-json", fault: steady(behaviour{kind: serveInvalidJSON}), wantErr: []string{"malformed"}},
		{name: "empty-key-set", fault: steady(behaviour{kind: serveEmptySet}), wantErr: []string{"no usable keys"}},
		{name: "body-10mib", fault: steady(behaviour{kind: serveHuge}), wantErr: []string{"too large"}},
		{name: "keys-10000", fault: func(t *testing.T, p *fakeIdP) {
			p.CheckManyKeys(t, []testkeys.JWK{key.jwk()}) // 10 000 keys under 1 MiB: the key count is what is refused
			p.SetBehaviour(behaviour{kind: serveManyKeys})
		}, wantErr: []string{"more than 100 keys"}},
		{name: "slow-drip", fault: steady(behaviour{kind: serveDrip}), cost: outageRefresh.fetchTimeout, wantErr: []string{"deadline", "timeout"}},
	}
	// The cases wait on wall-clock time, not on the CPU: they run all at
	// once, whatever -parallel is (t.Run from several goroutines).
	var wg sync.WaitGroup
	for _, tc := range tests {
		wg.Go(func() {
			t.Run(tc.name, func(t *testing.T) {
				heal := tc.heal
				if heal == nil {
					heal = func(_ *testing.T, p *fakeIdP) { p.SetBehaviour(behaviour{kind: serveOK}) }
				}
				testOutage(t, key, tc.fault, heal, tc.unseen, tc.cost, tc.wantErr)
			})
		})
	}
	wg.Wait()
}

// attemptGap separates two fetch attempts at the IdP: requests closer than
// this are one attempt (net/http resends a GET once when a reused
// keep-alive connection turns out closed). Backoff steps are 900ms or more.
const attemptGap = 250 * time.Millisecond

// groupAttempts folds the IdP's requests into fetch attempts: each is the
// first request's start and the last request's end.
func groupAttempts(hits []idpHit) []idpHit {
	var out []idpHit
	for _, h := range hits {
		if n := len(out); n > 0 && h.Start.Sub(out[n-1].End) < attemptGap {
			out[n-1].End = h.End
			continue
		}
		out = append(out, h)
	}
	return out
}

func testOutage(t *testing.T, key rhKey, breakIdP, heal func(*testing.T, *fakeIdP), unseen bool, cost time.Duration, wantErr []string) {
	r := outageRefresh
	idp := newFakeIdP(t, "max-age=4", key.jwk())
	svc := startJWKSVerify(t, rhConfig(idp.Issuer, "jwks_url: "+idp.JWKSURL, r, ""))
	base := "http://" + svc.HTTP
	c := rhClient(t)

	cached := key.mint(idp.Issuer)
	pr := rhStartProber(t, c, base, 50*time.Millisecond)
	pr.Family("cached", func() string { return cached })
	pr.Family("fresh", func() string { return key.mint(idp.Issuer) })

	// The outage starts right after the start-up fetch.
	breakIdP(t, idp)
	broken := time.Now()
	lastGood := idp.LastGood()
	if lastGood.IsZero() {
		t.Fatal("the IdP served no good JWKS before the outage")
	}
	staleEnd := lastGood.Add(r.staleFor)

	// Wait for the set to go stale and for at least three failed attempts
	// (1s and 2s backoff seen), then a little more, bounded.
	failures := func() int {
		if unseen {
			return int(rhIssuerMetric(rhMetrics(t, c, base), "jwks_fetch_errors_total", idp.Issuer))
		}
		var hits []idpHit
		for _, h := range idp.Hits(idpJWKSPath) {
			if !h.Start.Before(broken) && h.Done {
				hits = append(hits, h)
			}
		}
		return len(groupAttempts(hits))
	}
	_, ok := rhWaitFor(20*time.Second, func() bool {
		return time.Now().After(staleEnd.Add(time.Second)) && failures() >= 3
	})
	if !ok {
		t.Errorf("after 20s: %d failed attempts, want at least 3", failures())
	}
	// The service records a failure a moment after the IdP is done with
	// it: wait until its counters have caught up, then take its status.
	attempts := failures()
	var m map[string]float64
	if _, ok := rhWaitFor(2*time.Second, func() bool {
		m = rhMetrics(t, c, base)
		return int(rhIssuerMetric(m, "jwks_fetch_errors_total", idp.Issuer)) >= attempts
	}); !ok {
		t.Errorf("jwks_fetch_errors_total = %v, want at least the %d failed attempts", rhIssuerMetric(m, "jwks_fetch_errors_total", idp.Issuer), attempts)
	}
	status := rhIssuers(t, c, base)
	healed := time.Now()
	heal(t, idp)

	// Recovery without restart: the next retry (at most min_interval
	// +10% away, after an attempt of at most cost) finds the IdP healthy.
	readyBound := time.Duration(float64(r.minInterval)*1.1) + cost + 2*outageMargin
	ready, ok := rhWaitFor(readyBound+3*time.Second, func() bool {
		s, err := rhReadyz(c, base)
		return err == nil && s == 200
	})
	if !ok {
		t.Fatalf("not ready %v after the IdP healed", readyBound+3*time.Second)
	}
	time.Sleep(300 * time.Millisecond) // valid again, under load
	pr.Stop()
	after := rhMetrics(t, c, base)

	// Every outcome, phase by phase.
	var lastValid, firstUnavailable time.Time
	for _, o := range pr.Outcomes() {
		at := o.Sent.Sub(lastGood).Round(time.Millisecond)
		if o.Err != nil {
			t.Errorf("%s at %v: request failed: %v", o.Family, at, o.Err)
			continue
		}
		v := o.Verdict
		if o.Family == "readyz" {
			switch {
			case o.Got.Before(staleEnd.Add(-outageMargin)) && v.Status != 200:
				t.Errorf("readyz at %v (stale_for not over) = %d, want 200", at, v.Status)
			case o.Sent.After(staleEnd.Add(outageMargin)) && o.Got.Before(healed) && v.Status != 503:
				t.Errorf("readyz at %v (stale_for over, IdP down) = %d, want 503", at, v.Status)
			case o.Sent.After(ready.Add(outageMargin)) && v.Status != 200:
				t.Errorf("readyz at %v (recovered) = %d, want 200", at, v.Status)
			}
			continue
		}
		unavailable := v.Status == 503 && v.Error == "keys_unavailable"
		if !v.Valid && !unavailable {
			t.Errorf("%s at %v = %v, want valid or 503 keys_unavailable", o.Family, at, v)
		}
		if v.Valid && o.Sent.Before(staleEnd) {
			lastValid = o.Got
		}
		if unavailable && firstUnavailable.IsZero() {
			firstUnavailable = o.Sent
		}
		switch {
		case o.Got.Before(staleEnd.Add(-outageMargin)) && !v.Valid:
			t.Errorf("%s at %v (serving the last good set) = %v, want valid", o.Family, at, v)
		case o.Sent.After(staleEnd.Add(outageMargin)) && o.Got.Before(healed) && !unavailable:
			t.Errorf("%s at %v (stale_for over, IdP down) = %v, want 503 keys_unavailable", o.Family, at, v)
		case o.Sent.After(ready.Add(outageMargin)) && !v.Valid:
			t.Errorf("%s at %v (recovered) = %v, want valid", o.Family, at, v)
		}
	}

	// The backoff, as the IdP saw it: each gap from the end of one failed
	// attempt to the start of the next is the n-th backoff step ±10%.
	var hits []idpHit
	if !unseen {
		var raw []idpHit
		for _, h := range idp.Hits(idpJWKSPath) {
			if !h.Start.Before(broken) && h.Start.Before(healed) {
				raw = append(raw, h)
			}
		}
		hits = groupAttempts(raw)
		if len(raw) != len(hits) {
			t.Logf("%d requests at the IdP made %d attempts (net/http resends a GET once on a reused connection found closed)", len(raw), len(hits))
		}
		for i := 1; i < len(hits); i++ {
			step := backoffStep(i, r.minInterval)
			lo := time.Duration(float64(step)*0.9) - 50*time.Millisecond
			hi := time.Duration(float64(step)*1.1) + outageMargin
			switch hits[i-1].Kind {
			case serveRedirectTLS:
				// The attempt ends at the client, after the redirect is
				// followed and the TLS twin's handshake fails, not when the
				// IdP sent its 302: on a busy machine that is a second
				// connection and handshake later (CI: 1.613 s against
				// 1.6 s). The lower bound, which catches retry storms,
				// stays as tight.
				hi += outageMargin
			case serveManyKeys:
				// The attempt fails once the client has parsed the 10 000
				// keys the IdP finished sending: under -race on a busy
				// machine, up to a second or more later (3.976 s against
				// 2.7 s seen). The lower bound stays as tight.
				hi += 2 * outageMargin
			case serveDrip:
				// The client gives up at its fetch timeout; the IdP's drip
				// ends when its request's context is cancelled, which net/http
				// notices after the close, later on a busy machine (794 ms
				// against 850 ms seen in CI with the backoff at 1 s). Still
				// no storm: the lower bound stays above half the step.
				lo -= outageMargin / 2
			case serveHuge:
				// The client gives up at its body limit and closes; the
				// IdP's write ends when it notices, on either side of the
				// client's failure (1.711 s against 1.75 s, 2.285 s
				// against 1.6 s seen on a busy machine). Still no storm:
				// the lower bound stays near 0.9 × the step.
				lo -= outageMargin / 5
				hi += 2 * outageMargin
			}
			if gap := hits[i].Start.Sub(hits[i-1].End); gap < lo || gap > hi {
				t.Errorf("retry %d came %v after attempt %d failed, want %v..%v (backoff %v ±10%%)", i, gap.Round(time.Millisecond), i, lo, hi, step)
			}
		}
	}
	// The retry count over the whole outage.
	var firstFail time.Time
	if len(hits) > 0 {
		firstFail = hits[0].Start
	} else {
		// Unseen attempts: the first is the periodic refresh, at most
		// max_interval +10% after the last good fetch.
		firstFail = lastGood.Add(time.Duration(float64(r.maxInterval) * 0.9))
	}
	elapsed := healed.Sub(firstFail)
	lo, hi := minAttempts(elapsed, r.minInterval, cost), maxAttempts(elapsed+outageMargin, r.minInterval)
	if unseen {
		lo = minAttempts(healed.Sub(lastGood.Add(time.Duration(float64(r.maxInterval)*1.1))), r.minInterval, cost)
	}
	if attempts < lo || attempts > hi {
		t.Errorf("%d attempts in the %v outage, want %d..%d for backoff 1s, 2s, 4s capped at %v", attempts, healed.Sub(broken).Round(time.Millisecond), lo, hi, r.minInterval)
	}

	// What an operator sees during the outage and after it.
	if len(status) != 1 {
		t.Fatalf("/v1/issuers lists %d issuers, want 1", len(status))
	}
	st := status[0]
	matched := false
	for _, w := range wantErr {
		matched = matched || strings.Contains(strings.ToLower(st.LastError), strings.ToLower(w))
	}
	if !matched || st.Ready || !st.Stale || st.ConsecutiveFailures < 3 {
		t.Errorf("/v1/issuers during the outage = ready %v, stale %v, %d consecutive failures, last_error %q; want not ready, stale, at least 3 failures, an error mentioning one of %q",
			st.Ready, st.Stale, st.ConsecutiveFailures, st.LastError, wantErr)
	}
	if got := rhIssuerMetric(m, "issuer_ready", idp.Issuer); got != 0 {
		t.Errorf("issuer_ready during the outage = %v, want 0", got)
	}
	if got := rhIssuerMetric(m, "jwks_usable_remaining_seconds", idp.Issuer); got != 0 {
		t.Errorf("jwks_usable_remaining_seconds past stale_for = %v, want 0", got)
	}
	if got := rhIssuerMetric(after, "jwks_usable_remaining_seconds", idp.Issuer); got <= r.staleFor.Seconds()-2 {
		t.Errorf("jwks_usable_remaining_seconds after recovery = %v, want about stale_for (%v)", got, r.staleFor)
	}
	if got := rhIssuerMetric(after, "issuer_ready", idp.Issuer); got != 1 {
		t.Errorf("issuer_ready after recovery = %v, want 1", got)
	}
	if got := rhIssuerMetric(after, "jwks_consecutive_failures", idp.Issuer); got != 0 {
		t.Errorf("jwks_consecutive_failures after recovery = %v, want 0", got)
	}
	if !strings.Contains(svc.Output(), `"msg":"jwks fetch failed"`) {
		t.Errorf(`the service logged no "jwks fetch failed" line`)
	}

	t.Logf("%s: last good fetch at 0; outage from %+.2fs; %d attempts (want %d..%d) at %s; last valid %+.2fs, first keys_unavailable %+.2fs (stale_for %v); healed %+.2fs, ready %+.2fs (%v later); last_error %q",
		t.Name(), broken.Sub(lastGood).Seconds(), attempts, lo, hi, describeHits(hits, lastGood),
		lastValid.Sub(lastGood).Seconds(), firstUnavailable.Sub(lastGood).Seconds(), r.staleFor,
		healed.Sub(lastGood).Seconds(), ready.Sub(lastGood).Seconds(), ready.Sub(healed).Round(time.Millisecond), st.LastError)
	if strings.HasSuffix(t.Name(), "body-10mib") {
		t.Logf("%s: the client took %d bytes of the 10 MiB body before giving up", t.Name(), idp.HugeWritten())
	}

}

// TestResilienceUntrustedTLS configures an issuer whose jwks_url is an
// https server on loopback with a self-signed certificate the service does
// not trust. The service must refuse it: never ready, every verify 503
// keys_unavailable, the TLS error in /v1/issuers, and the handshake retried
// with the backoff (1s, 2s, 4s: counted as TLS connections at the server).
func TestResilienceUntrustedTLS(t *testing.T) {
	t.Parallel()
	key := rhKey{testkeys.EC256A, "tls-a", "ES256"}
	idp := newFakeIdP(t, "max-age=4", key.jwk())
	r := outageRefresh
	svc := rhStart(t, rhConfig(idp.Issuer, "jwks_url: "+idp.TLSURL(), r, ""))
	base := "http://" + svc.HTTP
	c := rhClient(t)
	started := time.Now()

	// Three handshakes: at start, 1s later, 2s after that.
	if _, ok := rhWaitFor(8*time.Second, func() bool { return len(idp.TLSConns()) >= 3 }); !ok {
		t.Fatalf("%d TLS connections after 8s, want 3", len(idp.TLSConns()))
	}
	v, err := rhVerify(c, base, key.mint(idp.Issuer))
	if err != nil || v.Status != 503 || v.Error != "keys_unavailable" {
		t.Errorf("Verify() = %v, %v; want 503 keys_unavailable", v, err)
	}
	if s, err := rhReadyz(c, base); err != nil || s != 503 {
		t.Errorf("readyz = %d, %v; want 503", s, err)
	}
	st := rhIssuers(t, c, base)
	if len(st) != 1 || st[0].Ready || !strings.Contains(st[0].LastError, "certificate") {
		t.Errorf("/v1/issuers = %+v; want not ready, last_error about the certificate", st)
	}
	conns := idp.TLSConns()
	for i := 1; i < len(conns); i++ {
		step := backoffStep(i, r.minInterval)
		lo := time.Duration(float64(step)*0.9) - 50*time.Millisecond
		// The backoff counts from the attempt's end at the client, the
		// failed handshake, not from its accept here: on a busy machine
		// the handshake is one more margin (CI: 1.618 s against 1.6 s,
		// the service's retry_in 1.069 s). The lower bound, which catches
		// retry storms, stays as tight.
		hi := time.Duration(float64(step)*1.1) + 2*outageMargin
		if gap := conns[i].Sub(conns[i-1]); gap < lo || gap > hi {
			t.Errorf("TLS attempt %d came %v after attempt %d, want %v..%v", i+1, gap.Round(time.Millisecond), i, lo, hi)
		}
	}
	if n := len(idp.Hits("")); n != 0 {
		t.Errorf("the IdP's handler saw %d requests over untrusted TLS, want 0", n)
	}
	var at []string
	for _, c := range conns {
		at = append(at, fmt.Sprintf("%+.2fs", c.Sub(started).Seconds()))
	}
	t.Logf("untrusted TLS: %d handshakes at %v, none completed; last_error %q", len(conns), at, st[0].LastError)
}
