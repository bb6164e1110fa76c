package service

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testlog"
)

// panickingHealth panics in both of its methods.
type panickingHealth struct {
	healthpb.UnimplementedHealthServer
}

func (panickingHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	panic("a bug in Check")
}

func (panickingHealth) Watch(*healthpb.HealthCheckRequest, healthpb.Health_WatchServer) error {
	panic("a bug in Watch")
}

// TestGRPCHandlerPanicEndsTheCallNotTheProcess: grpc-go recovers no
// handler's panic, so one panicking call stopped the whole process (every
// front end with it); with the listener's options and services registered
// as serve registers them ([recovering]) it is that call's INTERNAL,
// logged, and the server goes on answering.
func TestGRPCHandlerPanicEndsTheCallNotTheProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	// ReadHeader bounds the connection's HTTP/2 handshake (grpc-go's
	// ConnectionTimeout): not what is tested, so far above what a busy
	// machine takes.
	srv := grpc.NewServer(grpcServerOptions(1<<20, config.Timeouts{Idle: time.Minute, ReadHeader: 20 * time.Second, Read: 20 * time.Second},
		slog.New(slog.NewJSONHandler(&logs, nil)))...)
	healthpb.RegisterHealthServer(recovering{srv, slog.New(slog.NewJSONHandler(&logs, nil))}, panickingHealth{})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// WaitForReady: a first connection attempt that fails on a busy
	// machine is retried, not the call's UNAVAILABLE.
	for i := range 2 { // the second call shows the server still serves
		if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); status.Code(err) != codes.Internal {
			t.Fatalf("Check #%d = %v, want INTERNAL", i+1, err)
		}
	}
	w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); status.Code(err) != codes.Internal {
		t.Fatalf("Watch = %v, want INTERNAL", err)
	}
	lines := testlog.Lines(t, &logs)
	if len(lines) != 3 {
		t.Fatalf("%d log lines, want one per panic: %s", len(lines), logs.String())
	}
	for _, l := range lines {
		if l["msg"] != "gRPC call panicked; answered INTERNAL" || !strings.HasPrefix(l["panic"].(string), "a bug in") || l["stack"] == "" {
			t.Errorf("log line %v", l)
		}
	}
}

// TestGRPCServerHasNoUnaryInterceptor: the listener's options install no
// unary interceptor, so extauthz sends a cached token's shared answer as
// its encoding, made once; behind any unary interceptor it hands each
// Check a copy and encodes it again (about twice the Check). A unary
// handler's panic is recovered by [recovering] instead.
func TestGRPCServerHasNoUnaryInterceptor(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpcServerOptions(1<<20, config.Timeouts{Idle: time.Minute, ReadHeader: 20 * time.Second, Read: 20 * time.Second}, slog.New(slog.DiscardHandler))...)
	seen := make(chan bool, 1)
	desc := healthpb.Health_ServiceDesc
	desc.Methods = []grpc.MethodDesc{{MethodName: "Check", Handler: func(_ any, _ context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		seen <- ic != nil
		in := new(healthpb.HealthCheckRequest)
		if err := dec(in); err != nil {
			return nil, err
		}
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}}}
	desc.Streams = nil
	recovering{srv, slog.New(slog.DiscardHandler)}.RegisterService(&desc, panickingHealth{})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	if <-seen {
		t.Error("the gRPC server has a unary interceptor: every cached Check is encoded again (install recovery with recovering, not an interceptor)")
	}
}
