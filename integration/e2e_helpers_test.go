// Package integration runs jwksverify end to end: the real binary, real
// proxies (nginx, Caddy) and real upstreams, over loopback TCP.
//
// Shared helpers (this file) — use them from every integration test:
//
//   - [jwksverifyBinary]: the binary, built once per test run.
//   - [startJWKSVerify], [startJWKSVerifyWith]: run it with a config; its
//     HTTP (and gRPC) addresses, ready (/readyz 200) when it returns.
//   - [newTestIssuer]: a JWKS file of test keys and a token minter.
//   - [startDiscoveryIdP]: an OIDC identity provider on loopback (discovery
//     and a fixed JWKS over HTTP), counting fetches.
//   - [startEcho]: an upstream that answers every request with the request's
//     headers as JSON, and counts requests.
//   - [startProcess]: any process, its output captured (shown when the test
//     fails) and stopped in t.Cleanup; [waitTCP] polls until a port accepts.
//   - [requireTool]: an executable from the system, or skip (locally) / fail
//     (CI=true, where .ci/run installs it).
//   - [substituteText]: a deploy file's text with its documented placeholders
//     replaced.
//   - [freePort], [httpClient].
package integration

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// buildDir holds the binary built by jwksverifyBinary; TestMain removes it.
// It is the package's only shared state: one build per test run.
var (
	buildDir  string
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if buildDir != "" {
			os.RemoveAll(buildDir)
		}
		os.Exit(code)
	}))
}

// Bounds of every wait in these tests.
const (
	startTimeout = 10 * time.Second // a process until it listens and is ready
	stopTimeout  = 5 * time.Second  // a process after SIGTERM, before SIGKILL
	pollEvery    = 10 * time.Millisecond
)

// jwksverifyBinary returns the path of the jwksverify binary, built from
// this module once per test run (go build caches across runs), or the one
// JWKSVERIFY_E2E_BINARY names (to show that a regression test fails on
// another build, such as main's).
func jwksverifyBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("JWKSVERIFY_E2E_BINARY"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "jwksverify-e2e-")
		if buildErr != nil {
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		buildPath = filepath.Join(buildDir, "jwksverify")
		cmd := exec.Command(goTool, "build", "-o", buildPath, "./cmd/jwksverify")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/jwksverify: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// requireTool returns the path of the executable name. When it is missing,
// the test fails if CI=true (.ci/run installs it: a missing tool there is a
// broken CI, not a reason to skip) and is skipped otherwise, naming the
// Debian package to install.
func requireTool(t *testing.T, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s not found (%v): install the Debian package %q (apt-get install %s)", name, err, debianPackage, debianPackage)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI=true, so this fails instead of skipping")
	}
	t.Skip(msg)
	return ""
}

// freePort returns a loopback TCP port that was free a moment ago, for
// processes that cannot listen on port 0 and report it (nginx, Caddy).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// httpClient returns a client without keep-alive (no idle connection
// outlives a test) and with a bounded timeout.
func httpClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true},
		Timeout:   5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// output is a process's combined output, bounded to its last max bytes. It
// is safe for concurrent use.
type output struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	// Trim only past twice the bound, so heavy logging costs amortized O(1)
	// per byte instead of a max-sized copy on every write.
	if len(o.buf) > 2*o.max {
		o.buf = append(o.buf[:0], o.buf[len(o.buf)-o.max:]...)
	}
	return len(p), nil
}

// String returns the captured output.
func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.buf[max(0, len(o.buf)-o.max):])
}

// process is a running child process started by [startProcess].
type process struct {
	name string
	cmd  *exec.Cmd
	out  *output
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, set before done is closed
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output returns what the process wrote to stdout and stderr.
func (p *process) Output() string { return p.out.String() }

// startProcess starts cmd in its own process group, capturing its output.
// t.Cleanup stops it: SIGTERM, then SIGKILL to the whole group after
// stopTimeout (nginx workers must not outlive their master); when the test
// failed, the output is logged. A test binary killed before its cleanups
// run (go test's -timeout) takes the process with it (Pdeathsig), so no
// server outlives the run holding a port or a pipe.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{name: name, cmd: cmd, out: &output{max: 256 << 10}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = stopTimeout // children holding the output pipe cannot block Wait
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, p.Output())
		}
	})
	return p
}

// stop ends the process and its group, and waits for it.
func (p *process) stop() {
	pid := p.cmd.Process.Pid
	if !p.exited() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
		}
	}
	// Whatever is left of the group (pgid == pid): workers, stragglers.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.done
}

// waitTCP polls addr until it accepts a connection, p exits, or
// startTimeout passes.
func waitTCP(t *testing.T, p *process, addr string) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if p.exited() {
			t.Fatalf("%s exited before listening on %s: %v\n%s", p.name, addr, p.err, p.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not accepting connections after %v: %v", p.name, addr, startTimeout, err)
		}
		time.Sleep(pollEvery)
	}
}

// testIssuer is an issuer whose keys live in a JWKS file (testkeys RSA
// "rsa2048-a", kid "rsa-a"), with a minter for its tokens.
type testIssuer struct {
	// Issuer is the iss of its tokens.
	Issuer string
	// Audience is the aud of its tokens.
	Audience string
	// JWKSFile is the path of its JWKS document.
	JWKSFile string
}

// newTestIssuer writes the issuer's JWKS into a temp dir.
func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	is := &testIssuer{
		Issuer:   "https://idp.e2e.example/",
		Audience: "api://orders",
		JWKSFile: filepath.Join(t.TempDir(), "jwks.json"),
	}
	doc := testkeys.JWKS(testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A), Kid: "rsa-a", Alg: "RS256", Use: "sig"})
	if err := os.WriteFile(is.JWKSFile, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	return is
}

// Token mints an RS256 token of the issuer: sub "alice", scope
// "orders:read", valid for an hour from now (the binary runs on the real
// clock), with overrides (a nil value deletes a claim).
func (is *testIssuer) Token(over map[string]any) string {
	now := time.Now()
	c := map[string]any{
		"iss":   is.Issuer,
		"sub":   "alice",
		"aud":   is.Audience,
		"iat":   now.Unix(),
		"exp":   now.Add(time.Hour).Unix(),
		"scope": "orders:read",
	}
	for k, v := range over {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a"}, c)
}

// ForgedToken is a token of the issuer signed with another key (same kid):
// bad_signature.
func (is *testIssuer) ForgedToken() string {
	c := map[string]any{"iss": is.Issuer, "sub": "alice", "aud": is.Audience, "exp": time.Now().Add(time.Hour).Unix()}
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048B), map[string]any{"kid": "rsa-a"}, c)
}

// IssuerConfig is the issuers: entry for this issuer in a jwksverify config,
// indented as a list item, mapping sub and scope to X-Auth-Subject and
// X-Auth-Scope.
func (is *testIssuer) IssuerConfig() string {
	return fmt.Sprintf(`  - issuer: %s
    jwks_file: %s
    audiences: [%s]
    claims_to_headers: {sub: X-Auth-Subject, scope: X-Auth-Scope}
`, is.Issuer, is.JWKSFile, is.Audience)
}

// jwksverifyProc is a running jwksverify.
type jwksverifyProc struct {
	*process
	// HTTP and GRPC are the addresses it listens on ("" when gRPC is off);
	// Admin the admin listener's ("" when admin_listen is unset).
	HTTP, GRPC, Admin string
	// Config is the path of the configuration file it serves (a test
	// rewrites it to reload).
	Config string
}

// jwksverifyOptions tune [startJWKSVerifyWith].
type jwksverifyOptions struct {
	// Args are extra `serve` flags (--listen, --grpc-listen, …).
	Args []string
	// Unready returns once it listens, without waiting for /readyz 200
	// (an issuer whose keys are meant to be unavailable).
	Unready bool
	// Ready is the client readiness is polled with, and ReadyScheme its
	// scheme ("https" for a TLS listener). Nil and "" mean a plain client
	// over http. /readyz is asked on the admin listener when there is one.
	Ready       *http.Client
	ReadyScheme string
	// AdminScheme is the admin listener's scheme ("https" with
	// admin_tls; "" means http): /readyz is asked there with Ready.
	AdminScheme string
}

// startJWKSVerify runs `jwksverify serve --config` with configYAML and
// returns once it has logged its listening addresses and /readyz answers
// 200. It is stopped in t.Cleanup.
func startJWKSVerify(t *testing.T, configYAML string) *jwksverifyProc {
	t.Helper()
	return startJWKSVerifyWith(t, configYAML, jwksverifyOptions{})
}

// startJWKSVerifyWith is [startJWKSVerify] with options.
func startJWKSVerifyWith(t *testing.T, configYAML string, opts jwksverifyOptions) *jwksverifyProc {
	t.Helper()
	bin := jwksverifyBinary(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "jwksverify", exec.Command(bin, append([]string{"serve", "--config", cfg}, opts.Args...)...))
	j := &jwksverifyProc{process: p, Config: cfg}
	deadline := time.Now().Add(startTimeout)
	for j.HTTP == "" {
		j.HTTP, j.GRPC, j.Admin = listeningLine(p.Output())
		if j.HTTP != "" {
			break
		}
		if p.exited() {
			t.Fatalf("jwksverify exited before listening: %v\n%s", p.err, p.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("jwksverify logged no listening line after %v", startTimeout)
		}
		time.Sleep(pollEvery)
	}
	if opts.Unready {
		waitTCP(t, p, j.HTTP)
		return j
	}
	c, readyURL := httpClient(), "http://"+j.HTTP+"/readyz"
	if opts.Ready != nil {
		c = opts.Ready
	}
	if opts.ReadyScheme != "" {
		readyURL = opts.ReadyScheme + "://" + j.HTTP + "/readyz"
	}
	if j.Admin != "" {
		readyURL = cmp.Or(opts.AdminScheme, "http") + "://" + j.Admin + "/readyz"
	}
	for {
		resp, err := c.Get(readyURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		if p.exited() || time.Now().After(deadline) {
			t.Fatalf("jwksverify not ready after %v (last: %v, %v)", startTimeout, resp, err)
		}
		time.Sleep(pollEvery)
	}
}

// listeningLine finds the JSON log line {"msg":"listening","http":ADDR,
// "grpc":ADDR,"admin":ADDR} in out.
func listeningLine(out string) (httpAddr, grpcAddr, adminAddr string) {
	for line := range strings.Lines(out) {
		var l struct{ Msg, HTTP, GRPC, Admin string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" && l.HTTP != "" {
			return l.HTTP, l.GRPC, l.Admin
		}
	}
	return "", "", ""
}

// echo is an upstream that answers 200 with the request it got, as JSON.
type echo struct {
	URL  string // http://127.0.0.1:PORT
	Addr string // 127.0.0.1:PORT
	hits atomic.Int64
	last atomic.Pointer[echoed] // the last request
}

// echoed is the body an echo upstream answers with.
type echoed struct {
	Method  string      `json:"method"`
	URI     string      `json:"uri"`
	Headers http.Header `json:"headers"`
	Body    string      `json:"body"`
}

// Hits returns how many requests reached the upstream.
func (e *echo) Hits() int64 { return e.hits.Load() }

// Last returns the last request that reached the upstream, nil before one.
func (e *echo) Last() *echoed { return e.last.Load() }

// startEcho starts an echo upstream on 127.0.0.1:0, closed in t.Cleanup.
func startEcho(t *testing.T) *echo {
	t.Helper()
	e := &echo{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.hits.Add(1)
		var body bytes.Buffer
		_, _ = body.ReadFrom(http.MaxBytesReader(w, r.Body, 1<<20))
		got := echoed{Method: r.Method, URI: r.RequestURI, Headers: r.Header.Clone(), Body: body.String()}
		e.last.Store(&got)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(got)
	}))
	t.Cleanup(srv.Close)
	e.URL = srv.URL
	e.Addr = strings.TrimPrefix(srv.URL, "http://")
	return e
}

// discoveryIdP is a test OIDC identity provider on 127.0.0.1:0: discovery
// at /.well-known/openid-configuration and the JWKS at /jwks, holding the
// key of [testIssuer] (RSA "rsa2048-a", kid "rsa-a"). It is safe for
// concurrent use.
type discoveryIdP struct {
	// testIssuer mints the IdP's tokens; its Issuer is URL + "/" and it has
	// no JWKSFile.
	*testIssuer
	// URL is the IdP's base URL, http://127.0.0.1:PORT.
	URL string

	jwks                    []byte
	discoveryHits, jwksHits atomic.Int64
}

// startDiscoveryIdP starts an IdP, closed in t.Cleanup.
func startDiscoveryIdP(t *testing.T) *discoveryIdP {
	t.Helper()
	p := &discoveryIdP{jwks: testkeys.JWKS(testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A), Kid: "rsa-a", Alg: "RS256", Use: "sig"})}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	p.testIssuer = &testIssuer{Issuer: srv.URL + "/", Audience: "api://orders"}
	return p
}

func (p *discoveryIdP) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		p.discoveryHits.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": p.Issuer, "jwks_uri": p.URL + "/jwks"})
	case "/jwks":
		p.jwksHits.Add(1)
		_, _ = w.Write(p.jwks)
	default:
		http.NotFound(w, r)
	}
}

// Fetches returns how many discovery and JWKS requests the IdP received.
func (p *discoveryIdP) Fetches() (discovery, jwks int64) {
	return p.discoveryHits.Load(), p.jwksHits.Load()
}

// substitution replaces one placeholder of a deploy file.
type substitution struct{ old, new string }

// substituteText returns text with subs applied to its non-comment lines
// (lines starting with "#"), and fails unless each placeholder was found on
// exactly one of them: an edit of the file that breaks the substitution
// fails loudly instead of testing something else. name is for messages.
func substituteText(t *testing.T, name, text string, subs []substitution) string {
	t.Helper()
	counts := make([]int, len(subs))
	var b strings.Builder
	for line := range strings.Lines(text) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			for i, s := range subs {
				if strings.Contains(line, s.old) {
					counts[i]++
					line = strings.ReplaceAll(line, s.old, s.new)
				}
			}
		}
		b.WriteString(line)
	}
	for i, s := range subs {
		if counts[i] != 1 {
			t.Fatalf("%s: placeholder %q on %d non-comment lines, want exactly 1", name, s.old, counts[i])
		}
	}
	return b.String()
}
