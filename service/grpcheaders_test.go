package service

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/jwksverify/jwksverify/config"
)

// TestGRPCHeaderListBounded: the gRPC listener bounds a request's headers
// (its metadata) as the HTTP listener does (MaxHeaderBytes, 64 KiB):
// grpc-go's default is 16 MiB a stream, decoded and held for the whole
// call, on up to grpcMaxStreams streams of one connection.
func TestGRPCHeaderListBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpcServerOptions(1<<20, config.Timeouts{Idle: time.Minute, ReadHeader: 5 * time.Second}, slog.New(slog.DiscardHandler))...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	// Control: the same call without the padding is served, so the refusal
	// below is the bound's, not a broken connection's.
	if _, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("control call: %v", err)
	}
	md := metadata.MD{}
	for i := range 64 {
		md.Append("x-pad", strings.Repeat(string(rune('a'+i%26)), 64<<10)) // 4 MiB in all
	}
	ctx := metadata.NewOutgoingContext(t.Context(), md)
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	t.Logf("a call with 4 MiB of metadata: %v", err)
	if err == nil {
		t.Errorf("a call carrying 4 MiB of metadata was served; the HTTP listener refuses headers over %d bytes", MaxHeaderBytes)
	}
}
