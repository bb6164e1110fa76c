package extauthz

import (
	"context"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// parsed is resp as a client reads it: encoded, then decoded (the cached
// claims of dynamic_metadata are unknown fields until then).
func parsed(t *testing.T, resp *authv3.CheckResponse) *authv3.CheckResponse {
	t.Helper()
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	out := &authv3.CheckResponse{}
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSharedAnswersSentAsBuilt: an answer shared by many calls (a cached
// token's OK answer, a denial) is sent as its encoding made once; what a
// gRPC client reads is the answer built for the call, every time.
func TestSharedAnswersSentAsBuilt(t *testing.T) {
	e := newEnv(t, envConfig{tokenCache: 100})
	g := startGRPC(t, e)
	for _, tc := range []struct {
		name string
		req  *authv3.CheckRequest
		code codes.Code
	}{
		{"ok", envoyRequest("GET", "/orders/7", bearer(mint(claims(nil)))), codes.OK},
		{"ok-header-map", rawHeaders(envoyRequest("GET", "/orders/7", bearer(mint(claims(map[string]any{"sub": "bob"}))))), codes.OK},
		{"denied", envoyRequest("GET", "/orders/7", bearer(tokens()["expired"])), codes.Unauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := newAuthzGRPC(e.srv).Check(t.Context(), tc.req)
			if err != nil || codes.Code(want.GetStatus().GetCode()) != tc.code {
				t.Fatalf("Check() = %v, %v; want %v", want, err, tc.code)
			}
			for i := range 3 { // built, then shared
				got, err := g.authz.Check(t.Context(), tc.req)
				if err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(got, parsed(t, want)) {
					t.Fatalf("call %d: a client read %v, want %v", i, got, parsed(t, want))
				}
			}
		})
	}
}

// TestCheckHandlerSendsTheEncoding: the handler returns a shared answer's
// encoding (a response with no field but its bytes) from the second call
// on; behind an interceptor the call gets a copy of it to see (and maybe
// edit), and what the interceptor returns is what is sent.
func TestCheckHandlerSendsTheEncoding(t *testing.T) {
	e := newEnv(t, envConfig{tokenCache: 100})
	v := New(e.srv)
	req := envoyRequest("GET", "/orders/7", bearer(mint(claims(nil))))
	dec := func(m any) error { proto.Merge(m.(proto.Message), req); return nil }
	isWire := func(out any) bool {
		r := out.(*authv3.CheckResponse)
		return r.GetStatus() == nil && len(r.ProtoReflect().GetUnknown()) > 0
	}
	call := func(interceptor grpc.UnaryServerInterceptor) any {
		t.Helper()
		out, err := checkHandler(authzService{v}, context.Background(), dec, interceptor)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := call(nil); isWire(out) {
		t.Fatal("the first call's answer, just built, was sent as a shared encoding")
	}
	out := call(nil)
	if !isWire(out) {
		t.Fatalf("the second call sent %T %v, want the shared encoding", out, out)
	}
	if got := parsed(t, out.(*authv3.CheckResponse)); codes.Code(got.GetStatus().GetCode()) != codes.OK || got.GetOkResponse() == nil {
		t.Errorf("the encoding reads %v, want the OK answer", got)
	}
	var seen *authv3.CheckResponse
	reading := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		out, err := h(ctx, req)
		seen, _ = out.(*authv3.CheckResponse)
		return out, err
	}
	// Behind an interceptor the call gets its own copy of the shared
	// answer (the interceptor may edit it), and that copy is sent.
	if out := call(reading); isWire(out) || out != any(seen) || seen.GetOkResponse() == nil {
		t.Errorf("with an interceptor: sent wire=%v, the interceptor saw %v; want the answer seen sent", isWire(out), seen)
	}
	replaced := &authv3.CheckResponse{}
	replacing := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if _, err := h(ctx, req); err != nil {
			return nil, err
		}
		return replaced, nil
	}
	if out := call(replacing); out != any(replaced) {
		t.Errorf("an interceptor's own answer was not sent: %v", out)
	}
}

// TestOnWireIsTheEncoding: onWire's response encodes to resp's bytes.
func TestOnWireIsTheEncoding(t *testing.T) {
	e := newEnv(t, envConfig{tokenCache: 100})
	resp, err := newAuthzGRPC(e.srv).Check(t.Context(), envoyRequest("GET", "/orders/7", bearer(mint(claims(nil)))))
	if err != nil {
		t.Fatal(err)
	}
	w := onWire(resp)
	want, _ := proto.Marshal(resp)
	got, _ := proto.Marshal(w)
	if string(got) != string(want) || string(w.ProtoReflect().GetUnknown()) != string(protoreflect.RawFields(want)) {
		t.Errorf("onWire's encoding differs from the answer's")
	}
}
