package integration

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// Flood parameters: 20 000 requests with random kids over 10 s.
const (
	floodRequests = 20_000
	floodDuration = 10 * time.Second
	floodWorkers  = 8
	// Valid-token probes: a baseline without flood, then during the flood.
	baselineProbes = 150
	floodProbes    = 400
	probeEvery     = 20 * time.Millisecond
	// floodMinRequests is the least the generator must send for a real
	// load: 1 000 a second, a thousand times the refresh budget of
	// unknown_kid_interval 1s. On a busy machine it sends fewer than the
	// nominal floodRequests (16 167 at a load average of 11–17): the test
	// then holds the flood tokens' latency to the valid tokens' in the
	// same seconds, not the generator to a rate.
	floodMinRequests = floodRequests / 2
	// floodSlack is what a latency may exceed 3× its reference by: the
	// flood's own CPU on a 2-core machine that CI shares with other test
	// packages moves a sub-millisecond p90 by a millisecond or two (it
	// failed at 2.48 ms against 2 × 905 µs); a token held behind
	// refreshes would be slower by far more.
	floodSlack = time.Millisecond
)

// rawConn is a keep-alive HTTP/1.1 connection that posts pre-built verify
// requests: far cheaper per request than net/http's client, so that the
// load generator (race-instrumented, on the same two cores) disturbs the
// service as little as possible.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(addr string) (*rawConn, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawConn{c: c, br: bufio.NewReaderSize(c, 16<<10)}, nil
}

// verify posts token and returns the status and body.
func (r *rawConn) verify(token string) (int, []byte, error) {
	body := `{"token":"` + token + `"}`
	req := fmt.Sprintf("POST /v1/verify HTTP/1.1\r\nHost: jwksverify\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	_ = r.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(r.c, req); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, data, err
}

func (r *rawConn) Close() error { return r.c.Close() }

// randomKidToken returns a token of issuer with a random kid and a random
// signature: the service must reject it at the key lookup (unknown_kid).
func randomKidToken(issuer string) string {
	var kid [12]byte
	var sig [64]byte
	_, _ = rand.Read(kid[:])
	_, _ = rand.Read(sig[:])
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "ES256", "typ": "JWT", "kid": "flood-" + hex.EncodeToString(kid[:])})
	p, _ := json.Marshal(map[string]any{"iss": issuer, "aud": rhAudience, "sub": "flood", "exp": time.Now().Add(time.Hour).Unix()})
	return enc.EncodeToString(h) + "." + enc.EncodeToString(p) + "." + enc.EncodeToString(sig[:])
}

// probeLatency sends each token once, one every probeEvery, on one
// keep-alive connection, until done is closed (or the tokens run out), and
// returns the round-trip times of the valid verdicts and the number of
// answers that were not valid.
func probeLatency(t *testing.T, addr string, tokens []string, done <-chan struct{}) (lat []time.Duration, bad int) {
	t.Helper()
	rc, err := dialRaw(addr)
	if err != nil {
		t.Errorf("dial: %v", err)
		return nil, 1
	}
	defer rc.Close()
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for _, tok := range tokens {
		start := time.Now()
		status, body, err := rc.verify(tok)
		d := time.Since(start)
		switch {
		case err != nil:
			t.Errorf("valid token: %v", err)
			return lat, bad + 1
		case status != 200 || !bytes.HasPrefix(body, []byte(`{"valid":true`)):
			bad++
			t.Errorf("valid token = %d %s, want valid", status, body)
		default:
			lat = append(lat, d)
		}
		select {
		case <-done:
			return lat, bad
		case <-tick.C:
		}
	}
	return lat, bad
}

// probeControl sends GET /healthz, one every probeEvery, on one keep-alive
// connection until done is closed, and returns the round-trip times: the
// control, which touches no key set, measured in the same seconds as a
// probeLatency.
func probeControl(t *testing.T, addr string, done <-chan struct{}) []time.Duration {
	t.Helper()
	rc, err := dialRaw(addr)
	if err != nil {
		t.Errorf("dial: %v", err)
		return nil
	}
	defer rc.Close()
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	var lat []time.Duration
	for {
		start := time.Now()
		status, _, err := rc.get("/healthz", "")
		if err != nil || status != http.StatusOK {
			t.Errorf("control GET /healthz = %d, %v; want 200", status, err)
			return lat
		}
		lat = append(lat, time.Since(start))
		select {
		case <-done:
			return lat
		case <-tick.C:
		}
	}
}

// TestResilienceUnknownKidFlood sends 20 000 tokens with random kids over
// 10 s to the real binary (unknown_kid_interval 1s) while valid tokens keep
// arriving, and checks: the IdP sees at most ⌈flood time /
// unknown_kid_interval⌉ + 1 fetches; every flood token is rejected
// unknown_kid at once (its median and p90 latency within 3×, plus 1 ms, of
// the valid tokens' in the same seconds: how many the generator got out
// depends on the machine, so past a real load of floodMinRequests the
// test holds the answers, not the rate, to account); every valid token
// verifies; the valid tokens' median and p90 latency stay within 3× (plus
// 1 ms of a shared machine's noise) of a run without flood, measured just
// before in the same test, scaled by how much a control (GET /healthz, in
// the same seconds as each) slowed. Not parallel: it measures latency.
func TestResilienceUnknownKidFlood(t *testing.T) {
	key := rhKey{testkeys.EC256A, "flood-a", "ES256"}
	// max-age of an hour: no periodic refresh during the test, so that every
	// fetch after start-up is an unknown-kid refresh.
	idp := newFakeIdP(t, "max-age=3600", key.jwk())
	r := rhRefresh{minInterval: time.Second, maxInterval: time.Hour, defaultTTL: time.Hour,
		unknownKid: time.Second, staleFor: time.Hour, fetchTimeout: 2 * time.Second}
	// Rejections are logged (info, at most 20 lines a second): the log goes
	// to a file, so that capturing it is not part of what is measured.
	svc := rhStartLogged(t, rhConfig(idp.Issuer, "jwks_url: "+idp.JWKSURL, r, ""))
	base := "http://" + svc.HTTP

	tokens := make([]string, baselineProbes+floodProbes)
	for i := range tokens {
		tokens[i] = key.mint(idp.Issuer)
	}
	floodTokens := make([]string, floodRequests)
	for i := range floodTokens {
		floodTokens[i] = randomKidToken(idp.Issuer)
	}

	// Warm-up (connections, first verifies), then the baseline.
	if _, bad := probeLatency(t, svc.HTTP, tokens[:10], nil); bad != 0 {
		t.Fatal("warm-up failed")
	}
	baseDone := make(chan struct{})
	controlBase := make(chan []time.Duration)
	go func() { controlBase <- probeControl(t, svc.HTTP, baseDone) }()
	base0, bad := probeLatency(t, svc.HTTP, tokens[10:baselineProbes], nil)
	close(baseDone)
	control0 := <-controlBase
	if bad != 0 {
		t.Fatal("baseline failed")
	}

	// The flood: floodWorkers keep-alive connections, each request at its
	// slot of an even schedule over floodDuration, never after it.
	var (
		sent, unknownKid, other atomic.Int64
		wrong                   sync.Map // a few unexpected answers, for the message
		wg                      sync.WaitGroup
		floodLat                = make([][]time.Duration, floodWorkers) // each worker's round trips
	)
	fetchesBefore := len(idp.Hits(idpJWKSPath))
	start := time.Now()
	slot := floodDuration / floodRequests
	for w := range floodWorkers {
		wg.Go(func() {
			rc, err := dialRaw(svc.HTTP)
			if err != nil {
				other.Add(1)
				return
			}
			defer rc.Close()
			for i := w; i < floodRequests; i += floodWorkers {
				at := start.Add(time.Duration(i) * slot)
				if d := time.Until(at); d > 0 {
					time.Sleep(d)
				}
				if time.Since(start) >= floodDuration {
					return
				}
				sent.Add(1)
				t0 := time.Now()
				status, body, err := rc.verify(floodTokens[i])
				floodLat[w] = append(floodLat[w], time.Since(t0))
				switch {
				case err != nil:
					other.Add(1)
					wrong.Store(err.Error(), true)
					return
				case status == 200 && bytes.Contains(body, []byte(`"error":"unknown_kid"`)):
					unknownKid.Add(1)
				default:
					other.Add(1)
					wrong.Store(fmt.Sprintf("%d %s", status, body), true)
				}
			}
		})
	}
	done := make(chan struct{})
	var during, controlDuring []time.Duration
	var probeBad int
	var probes sync.WaitGroup
	probes.Go(func() { during, probeBad = probeLatency(t, svc.HTTP, tokens[baselineProbes:], done) })
	probes.Go(func() { controlDuring = probeControl(t, svc.HTTP, done) })
	wg.Wait()
	end := time.Now()
	close(done)
	probes.Wait()

	floodTime := end.Sub(start)
	var fetches []idpHit
	for _, h := range idp.Hits(idpJWKSPath) {
		if !h.Start.Before(start) && !h.Start.After(end) {
			fetches = append(fetches, h)
		}
	}
	// Requests are sent only within floodDuration (the last answers may
	// arrive a moment later): the bound is on the nominal 10 s.
	bound := int(math.Ceil(floodDuration.Seconds()/r.unknownKid.Seconds())) + 1
	m := rhMetrics(t, httpClient(), base)
	p50b, p90b := rhPercentile(base0, 50), rhPercentile(base0, 90)
	p50f, p90f := rhPercentile(during, 50), rhPercentile(during, 90)
	var flood []time.Duration
	for _, l := range floodLat {
		flood = append(flood, l...)
	}
	p50u, p90u := rhPercentile(flood, 50), rhPercentile(flood, 90)
	t.Logf("flood: %d requests with random kids in %v (%d unknown_kid, %d other); IdP: %d JWKS fetches during the flood (bound %d), %d before; unknown-kid refreshes %v, suppressed %v",
		sent.Load(), floodTime.Round(time.Millisecond), unknownKid.Load(), other.Load(), len(fetches), bound, fetchesBefore,
		rhIssuerMetric(m, "jwks_unknown_kid_refreshes_total", idp.Issuer), rhIssuerMetric(m, "jwks_unknown_kid_refreshes_suppressed_total", idp.Issuer))
	t.Logf("valid-token latency: without flood p50 %v p90 %v (n=%d); during the flood p50 %v p90 %v (n=%d); ratio p50 %.2f, p90 %.2f",
		p50b, p90b, len(base0), p50f, p90f, len(during), float64(p50f)/float64(p50b), float64(p90f)/float64(p90b))
	t.Logf("control (GET /healthz) latency: without flood p50 %v p90 %v (n=%d); during the flood p50 %v p90 %v (n=%d)",
		rhPercentile(control0, 50), rhPercentile(control0, 90), len(control0),
		rhPercentile(controlDuring, 50), rhPercentile(controlDuring, 90), len(controlDuring))
	t.Logf("flood-token latency: p50 %v p90 %v p99 %v max %v (n=%d); against the valid tokens in the same seconds p50 %.2f, p90 %.2f",
		p50u, p90u, rhPercentile(flood, 99), rhPercentile(flood, 100), len(flood), float64(p50u)/float64(p50f), float64(p90u)/float64(p90f))

	// A real load: at least floodMinRequests. Short of the nominal rate, the
	// generator was slowed by the machine (its workers send back to back
	// once behind their schedule), not by the service: the flood tokens
	// were answered at once, no slower than the valid tokens verified in
	// the same seconds on the same machine (the control; within 3× plus
	// floodSlack, as below). A flood token held behind a refresh waits
	// for it, and a generator held by such waits sends far fewer.
	if sent.Load() < floodMinRequests {
		t.Errorf("the flood sent %d requests in %v, want at least %d of the nominal %d (a real load)", sent.Load(), floodDuration, floodMinRequests, floodRequests)
	}
	if p50u > 3*p50f+floodSlack || p90u > 3*p90f+floodSlack {
		t.Errorf("flood-token latency p50 %v p90 %v > 3 × the valid tokens' in the same seconds (p50 %v p90 %v) + %v: flood tokens not answered at once",
			p50u, p90u, p50f, p90f, floodSlack)
	}
	if other.Load() != 0 {
		var some []string
		wrong.Range(func(k, _ any) bool { some = append(some, k.(string)); return len(some) < 3 })
		t.Errorf("%d flood requests were not answered 200 unknown_kid, e.g. %q", other.Load(), some)
	}
	if len(fetches) > bound {
		t.Errorf("IdP saw %d JWKS fetches during a %v flood, want at most ⌈%v / %v⌉ + 1 = %d", len(fetches), floodTime.Round(time.Millisecond), floodDuration, r.unknownKid, bound)
	}
	if len(fetches) == 0 {
		t.Error("IdP saw no fetch during the flood, want the unknown-kid refreshes the budget allows")
	}
	if got := rhIssuerMetric(m, "jwks_unknown_kid_refreshes_suppressed_total", idp.Issuer); got < float64(unknownKid.Load())/2 {
		t.Errorf("jwks_unknown_kid_refreshes_suppressed_total = %v, want most of the %d flood tokens", got, unknownKid.Load())
	}
	if got := rhIssuerMetric(m, "jwks_unknown_kid_refreshes_total", idp.Issuer); got > float64(bound) {
		t.Errorf("jwks_unknown_kid_refreshes_total = %v, want at most %d", got, bound)
	}
	if probeBad != 0 || len(during) < floodProbes/2 {
		t.Errorf("during the flood: %d valid verdicts, %d bad; want every valid token valid and at least %d probes", len(during), probeBad, floodProbes/2)
	}
	// Against the baseline, scaled by how much the control (GET /healthz,
	// in the same seconds as each) slowed: on a busy machine an idle
	// service is scheduled at once and a busy one waits its turn behind
	// other processes (a load average of 10 moved the p90 from 0.8 to
	// 12 ms, /healthz's alike); the flood's own CPU on an idle machine
	// slows both alike too. A token held behind refreshes slows alone.
	for _, c := range []struct {
		name               string
		during, base       time.Duration
		controlF, controlB time.Duration
	}{
		{"p50", p50f, p50b, rhPercentile(controlDuring, 50), rhPercentile(control0, 50)},
		{"p90", p90f, p90b, rhPercentile(controlDuring, 90), rhPercentile(control0, 90)},
	} {
		scale := max(1, float64(c.controlF)/float64(max(c.controlB, 1)))
		if float64(c.during) > 3*scale*float64(c.base)+float64(floodSlack) {
			t.Errorf("valid-token %s latency during the flood %v > 3 × %v without × %.2f (the control's slowdown: %v against %v) + %v",
				c.name, c.during, c.base, scale, c.controlF, c.controlB, floodSlack)
		}
	}
	if s, _ := rhReadyz(httpClient(), base); s != 200 {
		t.Errorf("readyz after the flood = %d, want 200", s)
	}
	// Rejection lines are rate-limited (log.rejections_per_second, default
	// 20): the flood must not become a log flood, and what was dropped is
	// summarized.
	logged := svc.Lines(`"class":"unknown_kid"`)
	maxLogged := 20 * (int(floodDuration.Seconds()) + 3)
	summaries := svc.Lines(`"msg":"token rejections not logged"`)
	t.Logf("log: %d unknown_kid lines for %d rejections, %d summary lines", logged, unknownKid.Load(), summaries)
	if logged <= 0 || logged > maxLogged {
		t.Errorf("%d unknown_kid log lines for %d rejections, want 1..%d (20 a second)", logged, unknownKid.Load(), maxLogged)
	}
	if summaries < 1 {
		t.Errorf("no \"token rejections not logged\" summary line after %d rejections", unknownKid.Load())
	}
}
