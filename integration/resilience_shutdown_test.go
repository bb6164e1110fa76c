package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// shutdownOutcome counts what the load of TestResilienceShutdownUnderLoad
// got.
type shutdownOutcome struct {
	ok       atomic.Int64 // answered correctly by the instance under test
	rerouted atomic.Int64 // refused at connection level after SIGTERM, answered correctly by the peer
	failed   atomic.Int64
	mu       sync.Mutex
	failures []string
}

func (o *shutdownOutcome) fail(format string) {
	o.failed.Add(1)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.failures) < 10 {
		o.failures = append(o.failures, format)
	}
}

// TestResilienceShutdownUnderLoad sends SIGTERM to the real binary in the
// middle of a 2-second load — forward-auth GETs on keep-alive connections
// and verify POSTs on fresh connections, like a proxy's — with one request
// in flight that waits on a slow unknown-kid refresh at the IdP. The
// instance must finish every request it accepted (the slow one included)
// and exit 0; no request may fail.
//
//   - shutdown_delay 0s (the default): the instance stops accepting at
//     once. The load balancer of this model sends a request refused at
//     connection level (no response byte) to a peer instance.
//   - shutdown_delay 2s, longer than the rest of the load: /readyz turns 503
//     draining at SIGTERM, the instance keeps accepting, and answers every
//     request itself — none needs the peer.
func TestResilienceShutdownUnderLoad(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{
		{"no-delay", 0},
		{"shutdown-delay-2s", 2 * time.Second},
	} {
		wg.Go(func() {
			t.Run(tc.name, func(t *testing.T) { testShutdown(t, tc.delay) })
		})
	}
	wg.Wait()
}

func testShutdown(t *testing.T, delay time.Duration) {
	key := rhKey{testkeys.EC256A, "down-a", "ES256"}
	newKey := rhKey{testkeys.EC256B, "down-b", "ES256"}
	idp := newFakeIdP(t, "max-age=3600", key.jwk())
	// unknown_kid_wait 2s: the slow refresh below (700ms) is waited for.
	r := rhRefresh{minInterval: time.Second, maxInterval: time.Hour, defaultTTL: time.Hour,
		unknownKid: time.Second, staleFor: time.Hour, fetchTimeout: 5 * time.Second, unknownKidWait: 2 * time.Second}
	cfg := rhConfig(idp.Issuer, "jwks_url: "+idp.JWKSURL, r, "shutdown_delay: "+delay.String()+"\n")
	victim := startJWKSVerify(t, cfg)
	peer := startJWKSVerify(t, cfg)

	tokens := make([]string, 64)
	for i := range tokens {
		tokens[i] = key.mint(idp.Issuer)
	}
	var out shutdownOutcome
	var terminated atomic.Bool
	keepAlive := &http.Transport{MaxIdleConnsPerHost: 16}
	fresh := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(keepAlive.CloseIdleConnections)

	// do sends one request to addr; it reports whether an answer started.
	do := func(tr *http.Transport, addr string, i int) (status int, body []byte, answered bool, err error) {
		tok := tokens[i%len(tokens)]
		var req *http.Request
		if tr == keepAlive {
			req, _ = http.NewRequest(http.MethodGet, "http://"+addr+"/v1/authz/orders", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
		} else {
			b, _ := json.Marshal(map[string]string{"token": tok})
			req, _ = http.NewRequest(http.MethodPost, "http://"+addr+"/v1/verify", bytes.NewReader(b))
		}
		var gotByte atomic.Bool
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { gotByte.Store(true) }})
		resp, err := (&http.Client{Transport: tr}).Do(req.WithContext(ctx))
		if err != nil {
			return 0, nil, gotByte.Load(), err
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		return resp.StatusCode, body, true, err
	}
	correct := func(tr *http.Transport, status int, body []byte) bool {
		if tr == keepAlive {
			return status == 200
		}
		return status == 200 && bytes.HasPrefix(body, []byte(`{"valid":true`))
	}

	// The load runs until a second after SIGTERM (within shutdown_delay,
	// where there is one). SIGTERM comes once it is a real load: 100
	// answers, polled (a fixed second of load was 53 answers on a busy
	// 2-core machine).
	const loadAfterSIGTERM = time.Second
	const realLoad = 100
	start := time.Now()
	stopLoad := make(chan struct{})
	loading := func() bool {
		select {
		case <-stopLoad:
			return false
		default:
			return true
		}
	}
	stop := sync.OnceFunc(func() { close(stopLoad) })
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() }) // a test that fails early stops its load too
	for w := range 6 {
		tr := keepAlive
		if w >= 4 {
			tr = fresh
		}
		wg.Go(func() {
			for i := w; loading(); i += 6 {
				status, body, answered, err := do(tr, victim.HTTP, i)
				switch {
				case err == nil && correct(tr, status, body):
					out.ok.Add(1)
				case err != nil && !answered && terminated.Load():
					// Refused at connection level by the stopping instance:
					// the load balancer tries the peer.
					status, body, _, err = do(tr, peer.HTTP, i)
					if err != nil || !correct(tr, status, body) {
						out.fail("peer: " + describe(status, body, err))
					} else {
						out.rerouted.Add(1)
					}
				default:
					out.fail(describe(status, body, err))
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}

	// Under load: a request that waits on a slow unknown-kid refresh, then
	// SIGTERM while it is in flight.
	if _, ok := rhWaitFor(30*time.Second, func() bool { return out.ok.Load() >= realLoad }); !ok {
		t.Fatalf("%d requests answered in 30s, want %d before SIGTERM (a real load)", out.ok.Load(), realLoad)
	}
	idp.SetKeys(key.jwk(), newKey.jwk())
	idp.Next(behaviour{kind: serveOK, delay: 700 * time.Millisecond})
	slow := make(chan error, 1)
	var slowTook time.Duration
	go func() {
		t0 := time.Now()
		v, err := rhVerify(httpClient(), "http://"+victim.HTTP, newKey.mint(idp.Issuer))
		slowTook = time.Since(t0)
		if err == nil && !v.Valid {
			err = errors.New("verdict " + v.String())
		}
		slow <- err
	}()
	if _, ok := rhWaitFor(2*time.Second, func() bool { return idp.CountSince(idpJWKSPath, start) > 0 }); !ok {
		t.Fatal("the slow request never reached the IdP")
	}
	sigterm := time.Now()
	terminated.Store(true)
	if err := victim.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(loadAfterSIGTERM, stop)
	if delay > 0 {
		// During shutdown_delay: still serving, but not ready.
		// A keep-alive client, to see that the answer closes its connection.
		c := rhClient(t)
		var status int
		var body []byte
		var closes bool
		if _, ok := rhWaitFor(delay/2, func() bool {
			resp, err := c.Get("http://" + victim.HTTP + "/readyz")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			status, closes = resp.StatusCode, resp.Close
			return status == 503 && bytes.Contains(body, []byte(`"draining":true`))
		}); !ok || !closes {
			t.Errorf("readyz during shutdown_delay = %d %q (Connection: close %v), want 503 draining, closing the connection", status, clip(body), closes)
		}
	}
	wg.Wait()
	if err := <-slow; err != nil {
		t.Errorf("the request in flight at SIGTERM: %v, want valid", err)
	}
	select {
	case <-victim.done:
	case <-time.After(stopTimeout):
		t.Fatalf("still running %v after SIGTERM", stopTimeout)
	}
	exited := time.Now()
	if victim.err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", victim.err)
	}
	for _, want := range []string{`"msg":"shutting down"`, `"msg":"stopped"`} {
		if !bytes.Contains([]byte(victim.Output()), []byte(want)) {
			t.Errorf("no %s log line", want)
		}
	}
	t.Logf("shutdown under load (shutdown_delay %v): %d answered by the instance, %d refused after SIGTERM and answered by the peer, %d failed; the in-flight request took %v; exit %v after SIGTERM",
		delay, out.ok.Load(), out.rerouted.Load(), out.failed.Load(), slowTook.Round(time.Millisecond), exited.Sub(sigterm).Round(time.Millisecond))
	if n := out.failed.Load(); n != 0 {
		t.Errorf("%d requests failed, e.g. %q", n, out.failures)
	}
	if delay > 0 && out.rerouted.Load() != 0 {
		t.Errorf("%d requests refused during shutdown_delay %v, want every request answered by the instance", out.rerouted.Load(), delay)
	}
	if out.ok.Load() < realLoad {
		t.Errorf("only %d requests answered before the shutdown, want a real load", out.ok.Load())
	}
}

// describe renders a failed request.
func describe(status int, body []byte, err error) string {
	if err != nil {
		return err.Error()
	}
	return http.StatusText(status) + " " + clip(body)
}
