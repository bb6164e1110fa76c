package service

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

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
	srv := grpc.NewServer(grpcServerOptions(1<<20, config.Timeouts{Idle: 300 * time.Millisecond, ReadHeader: 20 * time.Second}, slog.New(slog.DiscardHandler))...)
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

// TestGRPCHealthWatchRequestBounded: with the listener's options (read
// timeout 300 ms), a health Watch whose request never comes ends with
// DeadlineExceeded, as any call past its deadline; a Watch whose request
// came is not bounded: it reports a change made after the silent one ended.
func TestGRPCHealthWatchRequestBounded(t *testing.T) {
	const read = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpcServerOptions(1<<20, config.Timeouts{Idle: time.Minute, ReadHeader: 20 * time.Second, Read: read}, slog.New(slog.DiscardHandler))...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a bound on a busy machine, far above 300 ms
	defer cancel()

	opened := time.Now()
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch Recv() = %v, %v; want SERVING", resp.GetStatus(), err)
	}

	// The silent stream's own bound, far above 300 ms: past it the client
	// gives up, and the server had not ended the stream.
	const wait = 5 * time.Second
	sctx, scancel := context.WithTimeout(ctx, wait)
	defer scancel()
	start := time.Now()
	silent, err := conn.NewStream(sctx, &healthpb.Health_ServiceDesc.Streams[0], healthWatch) // headers, never the request
	if err != nil {
		t.Fatal(err)
	}
	var resp healthpb.HealthCheckResponse
	err = silent.RecvMsg(&resp)
	took := time.Since(start)
	if took >= wait || took < read {
		t.Fatalf("silent Watch ended after %s (%v), want after the read timeout %s and before %s", took, err, read, wait)
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("silent Watch RecvMsg() = %v, want DeadlineExceeded", err)
	}

	// Past the bound, the Watch with its request still reports a change.
	if lived := time.Since(opened); lived < read {
		t.Fatalf("the Watch lived %s, less than the read timeout", lived)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("Watch Recv() %s after it opened = %v, %v; want NOT_SERVING", time.Since(opened), resp.GetStatus(), err)
	}
}
