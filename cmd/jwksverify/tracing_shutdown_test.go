package main

import (
	"context"
	"log/slog"

	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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
	const shutdownTimeout = 8 * time.Second
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
	// The bound plus 5s for a busy machine; taking another
	// shutdown_timeout to flush is 8s more. TestTracingShutdownFlushesBy
	// checks the flush's deadline itself, without a clock.
	if bound := drainGrace + shutdownTimeout; took > bound+5*time.Second {
		t.Errorf("exited %s after SIGTERM, want within shutdown_delay (at least %s) + shutdown_timeout = %s; stderr:\n%s",
			took.Round(time.Millisecond), drainGrace, bound, p.stderr.String())
	}
}

// recordingExporter is a span exporter that records the deadline its
// Shutdown was given.
type recordingExporter struct {
	mu       sync.Mutex
	deadline time.Time
	ok       bool
}

func (e *recordingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }

func (e *recordingExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.deadline, e.ok = ctx.Deadline()
	return nil
}

// TestTracingShutdownFlushesBy: the flush at shutdown gets the deadline the
// drain ended by (what is left of shutdown_delay + shutdown_timeout), not
// a shutdown_timeout of its own after it; without a drain, timeout from
// now.
func TestTracingShutdownFlushesBy(t *testing.T) {
	const timeout = 15 * time.Second
	for _, tt := range []struct {
		name string
		by   time.Time
	}{
		{"after-a-drain", time.Now().Add(3 * time.Second)},
		{"deadline-passed", time.Now().Add(-time.Second)},
		{"no-drain", time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exp := &recordingExporter{}
			tr := &tracing{tp: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))}
			before := time.Now()
			tr.shutdown(slog.New(slog.DiscardHandler), tt.by, timeout)
			after := time.Now()
			exp.mu.Lock()
			defer exp.mu.Unlock()
			switch {
			case !exp.ok && !tt.by.IsZero() && tt.by.Before(before):
				// A deadline already past: the provider gives up before it
				// asks the exporter, which is what is wanted.
			case !exp.ok:
				t.Fatal("the exporter's Shutdown had no deadline")
			case !tt.by.IsZero() && !exp.deadline.Equal(tt.by):
				t.Errorf("flush deadline = %v, want the drain's %v", exp.deadline, tt.by)
			case tt.by.IsZero() && (exp.deadline.Before(before.Add(timeout)) || exp.deadline.After(after.Add(timeout))):
				t.Errorf("flush deadline = %v, want shutdown_timeout (%v) from the call", exp.deadline, timeout)
			}
		})
	}
}
