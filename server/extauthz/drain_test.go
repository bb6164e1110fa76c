package extauthz

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestHealthWhileDraining checks that draining turns gRPC health off while
// ext_authz keeps answering.
func TestHealthWhileDraining(t *testing.T) {
	e := newEnv(t, envConfig{noDown: true})
	g := startGRPC(t, e)
	resp, err := g.health.Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("before draining: health Check() = %v, %v; want SERVING", resp.GetStatus(), err)
	}
	e.srv.SetDraining()
	for _, svc := range []string{"", authorizationService} {
		resp, err := g.health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("draining: health Check(%q) = %v, %v; want NOT_SERVING", svc, resp.GetStatus(), err)
		}
	}
	list, err := g.health.List(t.Context(), &healthpb.HealthListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := list.GetStatuses()[""].GetStatus(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("draining: health List()[\"\"] = %v, want NOT_SERVING", got)
	}
	ok, err := g.authz.Check(t.Context(), envoyRequest("GET", "/", bearer(tokens()["valid"])))
	if err != nil || ok.GetOkResponse() == nil {
		t.Errorf("draining: ext_authz Check() = %v, %v; want OK", ok, err)
	}
}

// TestGRPCHealthWatchEndsOnDrain checks that an open Watch stream receives
// NOT_SERVING and ends when the server drains, that one opened afterwards
// ends at once, and that GracefulStop then returns without waiting for a
// client to go away.
func TestGRPCHealthWatchEndsOnDrain(t *testing.T) {
	tests := []struct {
		name    string
		service string
		// wantFirst is the status before draining; wantLast the one sent
		// on draining (unset: nothing more is sent).
		wantFirst, wantLast healthpb.HealthCheckResponse_ServingStatus
	}{
		{"overall", "", healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING},
		{"ext-authz", authorizationService, healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING},
		{"unknown-service", "orders.v1.Orders", healthpb.HealthCheckResponse_SERVICE_UNKNOWN, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envConfig{noDown: true})
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			g := grpc.NewServer()
			Register(g, e.srv) // the production Watch interval (1s): draining must not wait for it
			served := make(chan error, 1)
			go func() { served <- g.Serve(lis) }()
			defer g.Stop()
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			health := healthpb.NewHealthClient(conn)

			// Only the server may end the streams; the deadline keeps a
			// stream that it never ends from hanging the test.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			stream, err := health.Watch(ctx, &healthpb.HealthCheckRequest{Service: tt.service})
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := stream.Recv(); err != nil || resp.GetStatus() != tt.wantFirst {
				t.Fatalf("first Watch Recv() = %v, %v; want %v", resp.GetStatus(), err, tt.wantFirst)
			}

			e.srv.SetDraining()
			if tt.wantLast >= 0 {
				if resp, err := stream.Recv(); err != nil || resp.GetStatus() != tt.wantLast {
					t.Fatalf("Watch Recv() after SetDraining = %v, %v; want %v", resp.GetStatus(), err, tt.wantLast)
				}
			}
			if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
				t.Errorf("Watch Recv() at the end = %v, want the stream ended with %v", err, codes.Unavailable)
			}

			// A Watch opened while draining gets the status and ends at once.
			late, err := health.Watch(ctx, &healthpb.HealthCheckRequest{Service: tt.service})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantLast >= 0 {
				if resp, err := late.Recv(); err != nil || resp.GetStatus() != tt.wantLast {
					t.Errorf("Watch opened while draining: Recv() = %v, %v; want %v", resp.GetStatus(), err, tt.wantLast)
				}
			} else if resp, err := late.Recv(); err != nil || resp.GetStatus() != tt.wantFirst {
				t.Errorf("Watch opened while draining: Recv() = %v, %v; want %v", resp.GetStatus(), err, tt.wantFirst)
			}
			if _, err := late.Recv(); status.Code(err) != codes.Unavailable {
				t.Errorf("Watch opened while draining: end = %v, want %v", err, codes.Unavailable)
			}

			// With every Watch ended, GracefulStop has nothing to wait for,
			// although the client connection is still open.
			stopped := make(chan struct{})
			go func() { g.GracefulStop(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(5 * time.Second):
				t.Fatal("GracefulStop() still waiting 5s after SetDraining")
			}
			if err := <-served; err != nil {
				t.Errorf("Serve() = %v", err)
			}
		})
	}
}
