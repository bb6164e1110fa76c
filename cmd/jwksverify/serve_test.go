package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
)

// postVerify sends {"token": tok} to base/v1/verify and decodes the answer.
func postVerify(t *testing.T, client *http.Client, url, body string) map[string]any {
	t.Helper()
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("POST %s: status %d, body not JSON: %v", url, resp.StatusCode, err)
	}
	return m
}

func waitReadyz(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz not 200 within 20s (last: %v)", base, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tokenBody(tok string) string { return `{"token":"` + tok + `"}` }

// TestServeDrainsOnSIGTERM keeps 200 keep-alive clients busy and sends
// SIGTERM in the middle, with shutdown_delay 0s. What the service promises
// from the signal on: every request it reads is answered, every answer says
// Connection: close, and no connection is closed under its client before the
// client was told so (connections idle at the signal stay open for
// drainGrace and carry one more request); a request still being sent when
// the server stops accepting is read to its end and answered. So a client that stops using the
// instance once told to close, as a pooled client behind a load balancer
// does, sees no failure at all: at most a refused new connection, which sent
// nothing. The process exits 0 within shutdown_timeout.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	writeFile(t, dir, "other.json", testkeys.JWKS(testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "ec-b", Alg: "ES256"}))
	writeFile(t, dir, "secret", testkeys.Secret())
	const shutdownTimeout = 5 * time.Second
	cfg := writeFile(t, dir, "cfg.yaml", []byte(fmt.Sprintf(`
listen: 127.0.0.1:0
shutdown_timeout: %s
issuers:
  - issuer: https://a.test/
    jwks_file: jwks.json
    audiences: [api]
    claims_to_headers: {sub: X-Auth-Subject}
  - issuer: internal
    secret_file: secret
    secret_kid: hs
  - issuer: mixed
    jwks_file: other.json
    secret_file: secret
`, shutdownTimeout)))
	p := startBin(t, nil, nil, "serve", "--config", cfg)
	addr, _ := p.waitLog(t, "listening")["http"].(string)
	base := "http://" + addr
	waitReadyz(t, base)

	now := time.Now()
	tok := mintRS256(claimsAt("https://a.test/", "api", now))
	checks := []struct {
		name, tok string
	}{
		{"jwks-file", tok},
		{"secret-file-with-kid", testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"kid": "hs"}, claimsAt("internal", "x", now))},
		{"merged-secret", testkeys.Mint("HS256", testkeys.Secret(), nil, claimsAt("mixed", "x", now))},
		{"merged-file", testkeys.Mint("ES256", testkeys.Private(testkeys.EC256B), map[string]any{"kid": "ec-b"}, claimsAt("mixed", "x", now))},
	}
	for _, c := range checks {
		if got := postVerify(t, http.DefaultClient, base+"/v1/verify", tokenBody(c.tok)); got["valid"] != true {
			t.Errorf("%s: /v1/verify = %v, want valid", c.name, got)
		}
	}

	const clients = 200
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxIdleConns: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var ok, told, refused atomic.Int64
	var mu sync.Mutex
	var failures []string
	fail := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, s)
	}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				req, _ := http.NewRequest(http.MethodGet, base+"/v1/authz/orders", nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := client.Do(req)
				if err != nil {
					var opErr *net.OpError
					if errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &opErr) && opErr.Op == "dial") {
						refused.Add(1) // a new connection refused: nothing was sent
					} else {
						fail(err.Error())
					}
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Auth-Subject") != "alice" {
					fail(fmt.Sprintf("status %d, X-Auth-Subject %q", resp.StatusCode, resp.Header.Get("X-Auth-Subject")))
					return
				}
				ok.Add(1)
				if resp.Close {
					told.Add(1) // told to go elsewhere: stop using this instance
					return
				}
			}
		})
	}
	// A slow client: its POST /v1/verify has its headers and half its body
	// sent before the signal and the rest only once the server has stopped
	// accepting, so the request is in flight across the drain. A server that
	// closed connections with requests in flight would fail it.
	slowBody, slowWriter := io.Pipe()
	slowDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/verify", slowBody)
		req.Header.Set("Content-Type", "application/json")
		c := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			slowDone <- err
			return
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK || m["valid"] != true {
			slowDone <- fmt.Errorf("status %d, body %v (%v), want 200 valid", resp.StatusCode, m, err)
			return
		}
		slowDone <- nil
	}()
	body := tokenBody(tok)
	if _, err := io.WriteString(slowWriter, body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}

	// SIGTERM in the middle of the load.
	deadline := time.Now().Add(20 * time.Second)
	for ok.Load() < 2000 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	before := ok.Load()
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // the listener is closed: the drain has begun
		}
		c.Close()
		if time.Since(signalled) > shutdownTimeout {
			t.Fatal("the server still accepts connections shutdown_timeout after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := io.WriteString(slowWriter, body[len(body)/2:]); err != nil {
		t.Errorf("slow request: writing the rest of its body after the listener closed: %v", err)
	}
	slowWriter.Close()
	if err := <-slowDone; err != nil {
		t.Errorf("slow request in flight across the drain: %v", err)
	}
	code := p.wait(t, shutdownTimeout+5*time.Second)
	took := time.Since(signalled)
	wg.Wait()

	if before < 2000 {
		t.Errorf("only %d requests before SIGTERM, want ≥ 2000", before)
	}
	if len(failures) > 0 {
		t.Errorf("%d requests failed during shutdown (want none), e.g. %s", len(failures), failures[0])
	}
	if told.Load() == 0 {
		t.Errorf("no answer after SIGTERM said Connection: close")
	}
	if code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0; stderr:\n%s", code, p.stderr.String())
	}
	if took > shutdownTimeout {
		t.Errorf("exited %s after SIGTERM, want within shutdown_timeout %s", took, shutdownTimeout)
	}
	t.Logf("%d requests answered (%d after SIGTERM); %d clients told to close, %d refused a new connection; exit after %s",
		ok.Load(), ok.Load()-before, told.Load(), refused.Load(), took.Round(time.Millisecond))
	if !strings.Contains(p.stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no \"stopped\" log line:\n%s", p.stderr.String())
	}
}

var (
	curlVerify = regexp.MustCompile(`curl -s -X POST (\S+) -d '(\{"token":"[A-Za-z0-9_.-]+"\})'`)
	curlAuthz  = regexp.MustCompile(`curl -si (\S+) -H 'Authorization: Bearer ([A-Za-z0-9_.-]+)'`)
)

// TestServeDemo runs `serve --demo`, parses the printed curl lines and runs
// them with net/http.
func TestServeDemo(t *testing.T) {
	var out testlog.Buffer
	p := startBin(t, nil, &out, "serve", "--demo", "--listen", "127.0.0.1:0", "--demo-issuer", "127.0.0.1:0")
	deadline := time.Now().Add(30 * time.Second)
	for !curlAuthz.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no curl line on stdout within 30s\nstdout: %s\nstderr: %s", out.String(), p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := curlVerify.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no verify curl line in:\n%s", out.String())
	}
	got := postVerify(t, http.DefaultClient, m[1], m[2])
	if got["valid"] != true {
		t.Fatalf("the printed token: %v, want valid:true", got)
	}
	claims, _ := got["claims"].(map[string]any)
	exp, _ := claims["exp"].(float64)
	iat, _ := claims["iat"].(float64)
	if claims["aud"] != demoAudience || exp-iat != 3600 {
		t.Errorf("demo claims = %v, want aud %q and a 1h lifetime", claims, demoAudience)
	}

	a := curlAuthz.FindStringSubmatch(out.String())
	req, _ := http.NewRequest(http.MethodGet, a[1], nil)
	req.Header.Set("Authorization", "Bearer "+a[2])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Auth-Subject") != demoSubject {
		t.Errorf("forward-auth curl: status %d, X-Auth-Subject %q; want 200, %q", resp.StatusCode, resp.Header.Get("X-Auth-Subject"), demoSubject)
	}

	// The tour's "mint more tokens" line works, for ES256 too.
	mint := regexp.MustCompile(`curl -s -X POST '(\S+/token\?\S+)'`).FindStringSubmatch(out.String())
	if mint == nil {
		t.Fatalf("no mint line in:\n%s", out.String())
	}
	resp, err = http.Post(mint[1], "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var minted struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&minted)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := postVerify(t, http.DefaultClient, m[1], tokenBody(minted.AccessToken)); got["valid"] != true || got["alg"] != "ES256" {
		t.Errorf("minted ES256 token: %v, want valid ES256", got)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 10*time.Second); code != 0 {
		t.Errorf("demo exit %d after SIGTERM, want 0", code)
	}
}

func TestServePortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := runBin(t, nil, "", "serve", "--demo", "--listen", ln.Addr().String(), "--demo-issuer", "127.0.0.1:0")
	if r.code != 1 || !strings.Contains(r.stderr, "already in use") || !strings.Contains(r.stderr, "--listen") {
		t.Errorf("serve on a taken port: exit %d, stderr %q; want 1 and a message saying it is in use and how to choose another", r.code, r.stderr)
	}
}

// TestServeGRPC runs the service with grpc_listen, calls Envoy's
// Authorization/Check on it, and stops it with SIGTERM while a gRPC health
// Watch stream is open: the stream gets NOT_SERVING and ends, readiness says
// draining for shutdown_delay while requests are still answered, and the
// process exits 0 well within shutdown_timeout.
func TestServeGRPC(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	const (
		shutdownDelay   = 2 * time.Second
		shutdownTimeout = 10 * time.Second
	)
	cfg := writeFile(t, dir, "cfg.yaml", []byte(fmt.Sprintf(`
listen: 127.0.0.1:0
shutdown_delay: %s
shutdown_timeout: %s
issuers: [{issuer: "https://a.test/", jwks_file: jwks.json, claims_to_headers: {sub: X-Auth-Subject}}]
`, shutdownDelay, shutdownTimeout)))
	p := startBin(t, nil, nil, "serve", "--config", cfg, "--grpc-listen", "127.0.0.1:0")
	line := p.waitLog(t, "listening")
	addr, _ := line["grpc"].(string)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("listening grpc = %q, want 127.0.0.1:<port> (line %v)", addr, line)
	}
	base := "http://" + line["http"].(string)
	waitReadyz(t, base)

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := authv3.NewAuthorizationClient(conn)
	now := time.Now()
	tests := []struct {
		name     string
		token    string
		wantCode codes.Code
	}{
		{"valid", mintRS256(claimsAt("https://a.test/", "api", now)), codes.OK},
		{"expired", mintRS256(claimsAt("https://a.test/", "api", now.Add(-2*time.Hour))), codes.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := client.Check(ctx, &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
				Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
					Method: "GET", Path: "/orders", Host: "api.test",
					Headers: map[string]string{"authorization": "Bearer " + tt.token},
				}},
			}})
			if err != nil {
				t.Fatalf("Check() = %v", err)
			}
			if got := codes.Code(resp.GetStatus().GetCode()); got != tt.wantCode {
				t.Errorf("Check() status = %v, want %v", got, tt.wantCode)
			}
		})
	}

	// A health Watch stream stays open across SIGTERM, as Envoy's or a
	// gRPC client's health checking keeps one.
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	watch, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch Recv() = %v, %v; want SERVING", resp.GetStatus(), err)
	}

	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("Watch Recv() after SIGTERM = %v, %v; want NOT_SERVING", resp.GetStatus(), err)
	}
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("Watch after SIGTERM: %v, want the stream ended with Unavailable", err)
	}

	// Within shutdown_delay: not ready, yet still answering, and closing
	// HTTP connections so that pooled clients go elsewhere.
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz during shutdown_delay: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(string(body)) != `{"ready":false,"draining":true}` || !resp.Close {
		t.Errorf("GET /readyz during shutdown_delay = %d %s (Connection: close %v); want 503 {\"ready\":false,\"draining\":true}, closed",
			resp.StatusCode, body, resp.Close)
	}
	if got := postVerify(t, http.DefaultClient, base+"/v1/verify", tokenBody(tests[0].token)); got["valid"] != true {
		t.Errorf("POST /v1/verify during shutdown_delay = %v, want valid", got)
	}
	check, err := client.Check(t.Context(), &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: "GET", Path: "/orders", Headers: map[string]string{"authorization": "Bearer " + tests[0].token},
		}},
	}})
	if err != nil || codes.Code(check.GetStatus().GetCode()) != codes.OK {
		t.Errorf("ext_authz Check() during shutdown_delay = %v, %v; want OK", check.GetStatus(), err)
	}

	// The gRPC connection stays open: GracefulStop must not wait for it.
	code := p.wait(t, shutdownDelay+shutdownTimeout+5*time.Second)
	took := time.Since(signalled)
	if code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0; stderr:\n%s", code, p.stderr.String())
	}
	if took < shutdownDelay || took > shutdownDelay+shutdownTimeout/2 {
		t.Errorf("exited %s after SIGTERM, want after shutdown_delay %s and well within shutdown_timeout %s", took, shutdownDelay, shutdownTimeout)
	}
}

// TestFreshConns: a connection is fresh from StateNew until its first
// transition, and close closes the fresh ones only.
func TestFreshConns(t *testing.T) {
	var f freshConns
	a1, a2 := net.Pipe()
	b1, b2 := net.Pipe()
	defer a2.Close()
	defer b2.Close()
	f.track(a1, http.StateNew)
	f.track(b1, http.StateNew)
	f.track(b1, http.StateActive)
	f.track(b1, http.StateIdle)
	if n := f.n.Load(); n != 1 {
		t.Fatalf("fresh = %d, want 1 (a1)", n)
	}
	f.close()
	if _, err := a1.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("fresh conn Write() = %v, want it closed", err)
	}
	go func() { _, _ = b2.Read(make([]byte, 1)) }()
	if _, err := b1.Write([]byte("x")); err != nil {
		t.Errorf("used conn Write() = %v, want it open", err)
	}
	b1.Close()
	f.track(a1, http.StateClosed)
	if n := f.n.Load(); n != 0 {
		t.Errorf("fresh = %d after the fresh conn closed, want 0", n)
	}
}
