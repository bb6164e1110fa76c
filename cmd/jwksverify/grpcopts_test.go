package main

import (
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/jwksverify/jwksverify/config"
)

// TestGRPCIdleConnectionClosed: a client that opens an HTTP/2 connection to
// the gRPC listener and then says nothing is disconnected once it has been
// idle for the HTTP idle timeout (grpc-go keeps it forever by default), as
// the HTTP listener disconnects a silent client.
func TestGRPCIdleConnectionClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpcServerOptions(1<<20, config.Timeouts{Idle: 300 * time.Millisecond, ReadHeader: time.Second})...)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The client preface and an empty SETTINGS frame, then silence.
	if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a bound on a busy machine, far above 300 ms
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the idle connection was not closed: %v", err)
	}
}
