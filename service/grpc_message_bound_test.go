package service

import (
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestGRPCMessageBoundIsTheConfigured: limits.max_body_bytes bounds "a gRPC
// message" (docs/API.md, docs/CONFIG.md). `jwksverify serve` enforced it with
// gRPC server options built in cmd, so a program that embeds the service
// from the same configuration, registering it (RegisterGRPC) on a
// grpc.Server of its own, had no way to get them and took grpc-go's 4 MiB:
// a CheckRequest over the configured bound was decided (here allowed) where
// the binary answers RESOURCE_EXHAUSTED. The options live with the service
// (GRPCServerOptions), which the binary builds its listener with too.
func TestGRPCMessageBoundIsTheConfigured(t *testing.T) {
	s := startOrdersPlan(t, "limits: {max_body_bytes: 65536}\n")
	c := grpcClientWith(t, s, s.GRPCServerOptions()...)
	tok := mintRS256(claimsAt("https://a.example/", "orders", time.Now()))
	for _, tt := range []struct {
		name string
		body int
		want codes.Code
	}{
		{"within", 1 << 10, codes.OK},
		{"over", 256 << 10, codes.ResourceExhausted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
				Http: &authv3.AttributeContext_HttpRequest{
					Method: "POST", Host: "api.example", Path: "/orders/1", Scheme: "https",
					Headers: map[string]string{"authorization": "Bearer " + tok},
					Body:    strings.Repeat("a", tt.body),
				},
			}}}
			resp, err := c.Check(t.Context(), req)
			if got := status.Code(err); got != tt.want {
				t.Fatalf("Check() of a %d-byte body = %v (%v), want %v: limits.max_body_bytes is 65536", tt.body, got, resp.GetStatus(), tt.want)
			}
			if tt.want == codes.OK && resp.GetOkResponse() == nil {
				t.Fatalf("premise: Check() = %v, want allowed", resp.GetStatus())
			}
		})
	}
}
