package extauthz

import (
	"context"
	"net"
	"runtime"
	"sync/atomic"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
)

// BenchmarkGRPCServerOptions is Check over loopback TCP with a repeated
// (cached) token, 32 callers over 2 connections as bench/http.sh's gRPC
// rows load it, with each gRPC server option set that was considered: a
// guide for choosing them (client and server share the process's cores,
// so the absolute numbers are not the one-core server's of bench/http.sh).
func BenchmarkGRPCServerOptions(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []grpc.ServerOption
	}{
		{"defaults", nil},
		{"stream-workers", []grpc.ServerOption{grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0)))}},
		{"buffers-64k", []grpc.ServerOption{grpc.ReadBufferSize(64 << 10), grpc.WriteBufferSize(64 << 10)}},
		{"max-streams-64", []grpc.ServerOption{grpc.MaxConcurrentStreams(64)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEnv(b, envConfig{tokenCache: 1000, quiet: true})
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			g := grpc.NewServer(bc.opts...)
			Register(g, e.srv)
			go func() { _ = g.Serve(lis) }()
			defer g.Stop()
			var clients [2]authv3.AuthorizationClient
			for i := range clients {
				cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					b.Fatal(err)
				}
				defer cc.Close()
				clients[i] = authv3.NewAuthorizationClient(cc)
			}
			req := envoyRequest("GET", "/orders/7", bearer(mint(claims(nil))))
			var n atomic.Uint32
			b.SetParallelism(32 / runtime.GOMAXPROCS(0))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				cl := clients[n.Add(1)%2]
				for pb.Next() {
					resp, err := cl.Check(context.Background(), req)
					if err != nil || codes.Code(resp.GetStatus().GetCode()) != codes.OK {
						b.Errorf("Check() = %v, %v; want OK", resp.GetStatus(), err)
						return
					}
				}
			})
		})
	}
}
