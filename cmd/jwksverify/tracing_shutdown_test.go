package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"
)

// silentCollector accepts connections and never answers: an OTLP
// collector that hangs (overloaded, or a proxy in front of one that is
// gone).
func silentCollector(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// The process stops within shutdown_delay (at least drainGrace) plus
// shutdown_timeout, as CONFIG.md says terminationGracePeriodSeconds may be
// set, even when the drain spends all of shutdown_timeout on a request
// that never ends and the trace collector does not answer: flushing the
// last spans gets what is left of shutdown_timeout, not another one.
func TestServeShutdownBoundWithHungCollector(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	const shutdownTimeout = 6 * time.Second
	cfg := writeFile(t, dir, "cfg.yaml", []byte(fmt.Sprintf(`
listen: 127.0.0.1:0
shutdown_timeout: %s
issuers:
  - issuer: https://a.test/
    jwks_file: jwks.json
    audiences: [api]
`, shutdownTimeout)))
	p := startBin(t, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + silentCollector(t),
		"OTEL_BSP_SCHEDULE_DELAY=600000", // the spans wait for the flush at shutdown
	}, nil, "serve", "--config", cfg)
	addr, _ := p.waitLog(t, "listening")["http"].(string)
	base := "http://" + addr
	waitReadyz(t, base)
	tok := mintRS256(claimsAt("https://a.test/", "api", time.Now()))
	if got := postVerify(t, http.DefaultClient, base+"/v1/verify", tokenBody(tok)); got["valid"] != true {
		t.Fatalf("/v1/verify = %v, want valid", got)
	}

	// A request whose body never ends keeps the drain busy for all of
	// shutdown_timeout (the read timeout is longer).
	slowBody, slowWriter := io.Pipe()
	defer slowWriter.Close()
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/verify", slowBody)
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = 1 << 10
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}()
	if _, err := io.WriteString(slowWriter, `{"token":"`); err != nil {
		t.Fatal(err)
	}

	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 3*shutdownTimeout+10*time.Second)
	took := time.Since(signalled)
	// The bound plus 3s for a busy machine; taking another
	// shutdown_timeout to flush is 6s more.
	if bound := drainGrace + shutdownTimeout; took > bound+3*time.Second {
		t.Errorf("exited %s after SIGTERM, want within shutdown_delay (at least %s) + shutdown_timeout = %s; stderr:\n%s",
			took.Round(time.Millisecond), drainGrace, bound, p.stderr.String())
	}
}
