package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/service"
)

// TestDrainNotHeldByStalledGRPCHandshake: a client that opened a
// connection to the gRPC listener and never sent its preface (or never
// finished its TLS handshake) must not hold the process past
// shutdown_timeout (CONFIG.md: after it, "the remaining connections are
// closed"). grpc-go's Stop, which the drain calls once shutdown_timeout
// passed, first waits for every handshake in progress, and a handshake
// ends only at grpc.ConnectionTimeout (the header timeout): the drain
// outlived its bound by up to that much. Here the header timeout is ten
// minutes, shutdown_timeout one second.
func TestDrainNotHeldByStalledGRPCHandshake(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte(`
listen: 127.0.0.1:0
grpc_listen: 127.0.0.1:0
shutdown_timeout: 1s
issuers: [{issuer: "https://a.test/", jwks_file: jwks.json}]
`))
	plan, err := config.Load(cfg, config.Overrides{}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	plan.HTTP.ReadHeader = 10 * time.Minute
	logger := slog.New(slog.DiscardHandler)
	svc, err := service.New(plan, service.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	a := &app{stdout: io.Discard, stderr: io.Discard}
	srv, code := a.newServers(svc, plan, logger)
	if srv == nil {
		t.Fatalf("newServers: exit %d", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- srv.run(ctx, svc, nil, nil, nil, logger) }()

	c, err := net.Dial("tcp", srv.gln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // ends the handshake, and a drain it held, when the test fails
	// The server's SETTINGS frame: its handshake with this connection has
	// begun. The client's preface never comes.
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if f, err := http2.NewFramer(io.Discard, c).ReadFrame(); err != nil {
		t.Fatalf("the server's first frame: %v", err)
	} else if _, ok := f.(*http2.SettingsFrame); !ok {
		t.Fatalf("the server's first frame is %T, want SETTINGS", f)
	}

	cancel() // SIGTERM: the drain begins after 1s, shutdown_timeout 1s
	select {
	case code := <-done:
		t.Logf("run returned %d", code)
	case <-time.After(30 * time.Second): // far above 1s + 1s, far below 10 minutes
		t.Fatal("30s after the signal, with shutdown_timeout 1s, the drain still waits for a gRPC handshake that never ends")
	}
}
