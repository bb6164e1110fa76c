package extauthz

import (
	"context"
	"sync"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// TestInterceptorEditsTheAnswerOfItsCall: a unary interceptor that edits
// the answer it is handed in place and returns it (a deny of its own, a
// header of its own) has that edit sent for its call, and for its call
// only: a cached token's OK answer is shared by every call of the token,
// and an edit made to it must neither be dropped in favour of the encoding
// made when it was built (an interceptor's deny sent as the OK) nor reach
// another call's answer. Run with -race: concurrent calls edit at once.
func TestInterceptorEditsTheAnswerOfItsCall(t *testing.T) {
	blocked := func(req *authv3.CheckRequest) bool {
		return req.GetAttributes().GetRequest().GetHttp().GetHeaders()["x-blocked"] == "1"
	}
	// denyInPlace turns the answer into a 403 when the request is blocked.
	denyInPlace := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		out, err := h(ctx, req)
		if resp, ok := out.(*authv3.CheckResponse); ok && err == nil && blocked(req.(*authv3.CheckRequest)) {
			resp.Status = &rpcstatus.Status{Code: int32(codes.PermissionDenied)}
			resp.HttpResponse = &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
				Status: &typev3.HttpStatus{Code: typev3.StatusCode_Forbidden},
			}}
			resp.DynamicMetadata = nil
		}
		return out, err
	}
	// addHeader adds the request's id to an OK answer.
	addHeader := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		out, err := h(ctx, req)
		if ok := out.(*authv3.CheckResponse).GetOkResponse(); ok != nil {
			id := req.(*authv3.CheckRequest).GetAttributes().GetRequest().GetHttp().GetHeaders()["x-request-id"]
			ok.Headers = append(ok.Headers, header("x-seen-request", id))
		}
		return out, err
	}
	token := bearer(mint(claims(map[string]any{"sub": "alice"})))
	req := func(id string, block bool) *authv3.CheckRequest {
		r := envoyRequest("GET", "/orders/7", token)
		r.Attributes.Request.Http.Headers["x-request-id"] = id
		if block {
			r.Attributes.Request.Http.Headers["x-blocked"] = "1"
		}
		return r
	}
	seen := func(resp *authv3.CheckResponse) []string {
		var ids []string
		for _, h := range resp.GetOkResponse().GetHeaders() {
			if h.GetHeader().GetKey() == "x-seen-request" {
				ids = append(ids, h.GetHeader().GetValue())
			}
		}
		return ids
	}

	t.Run("deny", func(t *testing.T) {
		e := newEnv(t, envConfig{tokenCache: 100})
		g := serveIntercepted(t, e, denyInPlace)
		for i, tc := range []struct {
			block bool
			want  codes.Code
		}{{false, codes.OK}, {true, codes.PermissionDenied}, {false, codes.OK}, {true, codes.PermissionDenied}} {
			resp, err := g.Check(t.Context(), req("r", tc.block))
			if err != nil {
				t.Fatal(err)
			}
			if got := codes.Code(resp.GetStatus().GetCode()); got != tc.want {
				t.Errorf("call %d (blocked %t): %v, want %v (the interceptor's answer)", i, tc.block, got, tc.want)
			}
		}
	})
	t.Run("header", func(t *testing.T) {
		e := newEnv(t, envConfig{tokenCache: 100})
		g := serveIntercepted(t, e, addHeader)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 5 {
					id := string(rune('a'+w)) + string(rune('0'+i))
					resp, err := g.Check(context.Background(), req(id, false))
					if err != nil {
						t.Error(err)
						return
					}
					if got := seen(resp); len(got) != 1 || got[0] != id {
						t.Errorf("call %s: the answer carries the interceptor's headers %q, want [%s]", id, got, id)
					}
				}
			})
		}
		wg.Wait()
	})
}

// serveIntercepted serves e's server over gRPC on 127.0.0.1:0 behind the
// unary interceptor ic, and returns a client of it.
func serveIntercepted(t *testing.T, e *env, ic grpc.UnaryServerInterceptor) authv3.AuthorizationClient {
	t.Helper()
	return startGRPCWith(t, e, []grpc.ServerOption{grpc.UnaryInterceptor(ic)}).authz
}
