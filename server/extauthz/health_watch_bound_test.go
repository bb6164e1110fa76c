package extauthz

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestHealthWatchesBounded: a health Watch lives as long as its client
// keeps it, holding a goroutine, a ticker and the stream's state on the
// server (about 8 KiB) for a few bytes of HTTP/2 from the client. The open
// Watches are bounded (1024): past the bound a Watch ends at once with
// RESOURCE_EXHAUSTED, and a slot freed by a client that went away is
// available again.
func TestHealthWatchesBounded(t *testing.T) {
	const bound, extra = 1024, 16
	g := startGRPC(t, newEnv(t, envConfig{noDown: true}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, firstCancel := context.WithCancel(ctx)
	open := func(ctx context.Context) (healthpb.HealthCheckResponse_ServingStatus, error) {
		s, err := g.health.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return 0, err
		}
		resp, err := s.Recv()
		return resp.GetStatus(), err
	}
	serving, refused := 0, 0
	for i := range bound + extra {
		wctx := ctx
		if i == 0 {
			wctx = first
		}
		st, err := open(wctx)
		switch {
		case err == nil && st == healthpb.HealthCheckResponse_SERVING:
			serving++
		case status.Code(err) == codes.ResourceExhausted:
			refused++
		default:
			t.Fatalf("Watch %d: %v, %v; want SERVING or RESOURCE_EXHAUSTED", i, st, err)
		}
	}
	if serving != bound || refused != extra {
		t.Fatalf("%d Watches: %d kept open, %d refused; want %d kept (the bound), %d refused", bound+extra, serving, refused, bound, extra)
	}
	// The first watcher goes away: its slot is free again.
	firstCancel()
	for {
		st, err := open(ctx)
		if err == nil && st == healthpb.HealthCheckResponse_SERVING {
			break
		}
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("Watch after a watcher left: %v, %v", st, err)
		}
	}
}
