package main

import (
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestStatusCode: the load client's reading of an encoded CheckResponse's
// status code agrees with protobuf's for OK, denied and unparsable answers.
func TestStatusCode(t *testing.T) {
	meta, err := structpb.NewStruct(map[string]any{"jwksverify": map[string]any{"claims": map[string]any{"sub": "x", "status": 7}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		msg  *authv3.CheckResponse
		want int32
	}{
		{"empty", &authv3.CheckResponse{}, 0},
		{"ok", &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(codes.OK)}}, 0},
		{"ok-with-metadata", &authv3.CheckResponse{Status: &rpcstatus.Status{}, DynamicMetadata: meta,
			HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{HeadersToRemove: []string{"authorization"}}}}, 0},
		{"denied", &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(codes.PermissionDenied), Message: "no"}}, int32(codes.PermissionDenied)},
		{"unauthenticated", &authv3.CheckResponse{DynamicMetadata: meta, Status: &rpcstatus.Status{Code: int32(codes.Unauthenticated)}}, int32(codes.Unauthenticated)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := proto.Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			if got := statusCode(b); got != tt.want {
				t.Errorf("statusCode() = %d, want %d", got, tt.want)
			}
		})
	}
	if got := statusCode([]byte{0x0a, 0x05, 0x08}); got != -1 {
		t.Errorf("statusCode(truncated) = %d", got)
	}
}
