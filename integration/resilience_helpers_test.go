package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// Helpers of the resilience tests (resilience_*_test.go): signing keys and
// tokens of a fake IdP, the service's configuration, a service started
// without waiting for readiness, verify / readiness / metrics calls, and a
// prober that drives the service continuously and records every outcome.
// Every identifier starts with rh so that nothing collides with the other
// integration files.

// rhAudience is the audience of every resilience token and configuration.
const rhAudience = "api://resilience"

// rhKey is a signing key of the fake IdP: a testkeys key under a kid.
type rhKey struct {
	name string // testkeys name
	kid  string
	alg  string
}

// jwk is the key as the IdP publishes it.
func (k rhKey) jwk() testkeys.JWK {
	return testkeys.JWK{Key: testkeys.Public(k.name), Kid: k.kid, Alg: k.alg, Use: "sig"}
}

// mint returns a token of issuer signed by k, valid for an hour, with a
// random jti: every token is distinct (no verified-token cache hit).
func (k rhKey) mint(issuer string) string {
	now := time.Now()
	var jti [12]byte
	_, _ = rand.Read(jti[:])
	return testkeys.Mint(k.alg, testkeys.Private(k.name), map[string]any{"kid": k.kid}, map[string]any{
		"iss": issuer,
		"sub": "resilience",
		"aud": rhAudience,
		"iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
		"jti": hex.EncodeToString(jti[:]),
	})
}

// rhRefresh is an issuer's refresh block.
type rhRefresh struct {
	minInterval, maxInterval, defaultTTL, unknownKid, staleFor, fetchTimeout time.Duration
	unknownKidWait                                                           time.Duration // 0: not written (the default)
}

// yaml renders the block as a flow mapping.
func (r rhRefresh) yaml() string {
	wait := ""
	if r.unknownKidWait != 0 {
		wait = fmt.Sprintf(", unknown_kid_wait: %s", r.unknownKidWait)
	}
	return fmt.Sprintf("{min_interval: %s, max_interval: %s, default_ttl: %s, unknown_kid_interval: %s, stale_for: %s, fetch_timeout: %s%s}",
		r.minInterval, r.maxInterval, r.defaultTTL, r.unknownKid, r.staleFor, r.fetchTimeout, wait)
}

// rhConfig returns a service configuration with one issuer whose key
// source is the YAML line source ("discovery: true" or "jwks_url: URL"),
// plus extra top-level YAML (state_dir, log, limits).
func rhConfig(issuer, source string, r rhRefresh, extra string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 5s
issuers:
  - issuer: %s
    %s
    audiences: [%s]
    claims_to_headers: {sub: X-Auth-Subject}
    refresh: %s
%s`, issuer, source, rhAudience, r.yaml(), extra)
}

// rhStart runs `jwksverify serve` with configYAML and returns once it logs
// its listening line, ready or not (startJWKSVerify also waits for /readyz
// 200). It is stopped in t.Cleanup.
func rhStart(t *testing.T, configYAML string) *jwksverifyProc {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return rhStartFile(t, cfg)
}

// rhStartFile is rhStart with a configuration file already written.
func rhStartFile(t *testing.T, cfg string) *jwksverifyProc {
	t.Helper()
	p := startProcess(t, "jwksverify", exec.Command(jwksverifyBinary(t), "serve", "--config", cfg))
	j := &jwksverifyProc{process: p}
	deadline := time.Now().Add(startTimeout)
	for {
		if j.HTTP, j.GRPC, _ = listeningLine(p.Output()); j.HTTP != "" {
			return j
		}
		if p.exited() {
			t.Fatalf("jwksverify exited before listening: %v\n%s", p.err, p.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("jwksverify logged no listening line after %v", startTimeout)
		}
		time.Sleep(pollEvery)
	}
}

// rhClient returns a keep-alive client with a bounded timeout whose idle
// connections are closed in t.Cleanup.
func rhClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// rhVerdict is the answer of POST /v1/verify.
type rhVerdict struct {
	Status int
	Valid  bool   `json:"valid"`
	Error  string `json:"error"`
	Kid    string `json:"kid"`
	Body   []byte `json:"-"`
}

// String renders the verdict for messages.
func (v rhVerdict) String() string {
	if v.Valid {
		return fmt.Sprintf("%d valid", v.Status)
	}
	return fmt.Sprintf("%d %s", v.Status, v.Error)
}

// rhVerify posts token to base/v1/verify.
func rhVerify(c *http.Client, base, token string) (rhVerdict, error) {
	body, _ := json.Marshal(map[string]string{"token": token})
	resp, err := c.Post(base+"/v1/verify", "application/json", bytes.NewReader(body))
	if err != nil {
		return rhVerdict{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return rhVerdict{}, err
	}
	v := rhVerdict{Status: resp.StatusCode, Body: data}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("POST /v1/verify: %d %q: %w", resp.StatusCode, data, err)
	}
	return v, nil
}

// rhReadyz returns the status of GET base/readyz.
func rhReadyz(c *http.Client, base string) (int, error) {
	resp, err := c.Get(base + "/readyz")
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// rhMetrics scrapes base/metrics into "name{labels}" -> value.
func rhMetrics(t *testing.T, c *http.Client, base string) map[string]float64 {
	t.Helper()
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

// rhIssuerMetric reads jwksverify_NAME{issuer="issuer"}.
func rhIssuerMetric(m map[string]float64, name, issuer string) float64 {
	return m[fmt.Sprintf("jwksverify_%s{issuer=%q}", name, issuer)]
}

// rhIssuerStatus is the part of one /v1/issuers entry the tests read.
type rhIssuerStatus struct {
	Issuer              string   `json:"issuer"`
	Ready               bool     `json:"ready"`
	LastError           string   `json:"last_error"`
	ConsecutiveFailures int      `json:"consecutive_failures"`
	Stale               bool     `json:"stale"`
	Kids                []string `json:"-"`
	Keys                []struct {
		Kid string `json:"kid"`
	} `json:"keys"`
}

// rhIssuers reads GET base/v1/issuers.
func rhIssuers(t *testing.T, c *http.Client, base string) []rhIssuerStatus {
	t.Helper()
	resp, err := c.Get(base + "/v1/issuers")
	if err != nil {
		t.Fatalf("GET /v1/issuers: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		Issuers []rhIssuerStatus `json:"issuers"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&out); err != nil {
		t.Fatalf("GET /v1/issuers: %v", err)
	}
	for i := range out.Issuers {
		for _, k := range out.Issuers[i].Keys {
			out.Issuers[i].Kids = append(out.Issuers[i].Kids, k.Kid)
		}
	}
	return out.Issuers
}

// rhWaitFor polls cond every 20 ms until it holds or timeout passes; it
// returns when it held (the zero time on timeout).
func rhWaitFor(timeout time.Duration, cond func() bool) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return time.Now(), true
		}
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rhOutcome is one request of a prober.
type rhOutcome struct {
	Family  string // which token family (or "readyz")
	Sent    time.Time
	Got     time.Time
	Verdict rhVerdict // Status only, for readyz
	Err     error
}

// rhProber drives a service every interval until stopped: one verify per
// token family (a family returning "" is skipped that round) and one
// /readyz. It records every outcome. Its methods are safe for concurrent
// use.
type rhProber struct {
	mu       sync.Mutex
	families map[string]func() string
	out      []rhOutcome
	stop     chan struct{}
	done     chan struct{}
}

// rhMaxOutcomes bounds what a prober records.
const rhMaxOutcomes = 50_000

// rhStartProber starts probing base every interval; it is stopped in
// t.Cleanup at the latest.
func rhStartProber(t *testing.T, c *http.Client, base string, interval time.Duration) *rhProber {
	p := &rhProber{families: map[string]func() string{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			p.mu.Lock()
			names := make([]string, 0, len(p.families))
			for n := range p.families {
				names = append(names, n)
			}
			p.mu.Unlock()
			slices.Sort(names)
			for _, n := range names {
				p.mu.Lock()
				f := p.families[n]
				p.mu.Unlock()
				tok := f()
				if tok == "" {
					continue
				}
				o := rhOutcome{Family: n, Sent: time.Now()}
				o.Verdict, o.Err = rhVerify(c, base, tok)
				o.Got = time.Now()
				p.record(o)
			}
			o := rhOutcome{Family: "readyz", Sent: time.Now()}
			o.Verdict.Status, o.Err = rhReadyz(c, base)
			o.Got = time.Now()
			p.record(o)
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(p.Stop)
	return p
}

// Family adds or replaces a token family.
func (p *rhProber) Family(name string, token func() string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.families[name] = token
}

func (p *rhProber) record(o rhOutcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.out) < rhMaxOutcomes {
		p.out = append(p.out, o)
	}
}

// Stop ends probing and waits for the last round. It is idempotent.
func (p *rhProber) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// Outcomes returns what was recorded so far.
func (p *rhProber) Outcomes() []rhOutcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.out)
}

// rhPercentile returns the p-th percentile (0..100) of ds, nearest rank.
func rhPercentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// rhLoggedProc is a jwksverify whose output goes straight to a file, not
// through a pipe into the test process: for tests that make it log
// thousands of lines, so that capturing them costs the service nothing.
type rhLoggedProc struct {
	HTTP    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

// rhStartLogged runs `jwksverify serve` with configYAML, its output in a
// file, and returns once /readyz answers 200. It is stopped in t.Cleanup
// (SIGTERM, then SIGKILL after stopTimeout); the end of its log is shown if
// the test failed.
func rhStartLogged(t *testing.T, configYAML string) *rhLoggedProc {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &rhLoggedProc{LogPath: filepath.Join(dir, "jwksverify.log"), done: make(chan struct{})}
	logFile, err := os.Create(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child has its own descriptor
	p.cmd = exec.Command(jwksverifyBinary(t), "serve", "--config", cfg)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- jwksverify log (end):\n%s", p.tail(16<<10))
		}
	})
	deadline := time.Now().Add(startTimeout)
	c := httpClient()
	for {
		if p.HTTP == "" {
			p.HTTP, _, _ = listeningLine(p.tail(64 << 10))
		}
		if p.HTTP != "" {
			if s, err := rhReadyz(c, "http://"+p.HTTP); err == nil && s == 200 {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("jwksverify exited before it was ready:\n%s", p.tail(16<<10))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("jwksverify not ready after %v:\n%s", startTimeout, p.tail(16<<10))
		}
		time.Sleep(pollEvery)
	}
}

// tail returns the last n bytes of the log.
func (p *rhLoggedProc) tail(n int64) string {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}

// Lines counts the log lines that contain s.
func (p *rhLoggedProc) Lines(s string) int {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return -1
	}
	return bytes.Count(b, []byte(s))
}
