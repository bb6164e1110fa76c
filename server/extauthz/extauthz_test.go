package extauthz

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// grpcEnv is an env served over gRPC on a real TCP listener.
type grpcEnv struct {
	*env
	authz  authv3.AuthorizationClient
	health healthpb.HealthClient
}

// startGRPC serves e's server over gRPC on 127.0.0.1:0 (Register, or the
// extra registrations) and dials it. Everything stops in t.Cleanup.
func startGRPC(t *testing.T, e *env, register ...func(*grpc.Server)) *grpcEnv {
	t.Helper()
	return startGRPCWith(t, e, nil, register...)
}

// startGRPCWith is startGRPC with more server options (an interceptor).
func startGRPCWith(t *testing.T, e *env, opts []grpc.ServerOption, register ...func(*grpc.Server)) *grpcEnv {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(server.DefaultMaxBodyBytes)}, opts...)...)
	if len(register) == 0 {
		Register(g, e.srv)
	}
	for _, r := range register {
		r(g)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		g.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
	return &grpcEnv{env: e, authz: authv3.NewAuthorizationClient(conn), health: healthpb.NewHealthClient(conn)}
}

// envoyRequest is the CheckRequest Envoy's ext_authz filter sends for an
// HTTP/1.1 request (default settings: the headers map with lower-case keys,
// pseudo-headers included; the path with its query).
func envoyRequest(method, path string, headers map[string]string) *authv3.CheckRequest {
	h := map[string]string{
		":authority":        "app.example.com",
		":method":           method,
		":path":             path,
		":scheme":           "http",
		"user-agent":        "curl/8.5.0",
		"x-forwarded-proto": "http",
		"x-request-id":      "6f1c2c7e-9d7a-4a4e-9b1e-1d2f3a4b5c6d",
	}
	for k, v := range headers {
		h[k] = v
	}
	addr := func(ip string, port uint32) *corev3.Address {
		return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}}
	}
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Source:      &authv3.AttributeContext_Peer{Address: addr("10.0.0.7", 53122)},
		Destination: &authv3.AttributeContext_Peer{Address: addr("10.0.0.2", 10000)},
		Request: &authv3.AttributeContext_Request{
			Time: timestamppb.New(epoch),
			Http: &authv3.AttributeContext_HttpRequest{
				Id:       "1234567890",
				Method:   method,
				Headers:  h,
				Path:     path,
				Host:     "app.example.com",
				Scheme:   "http",
				Protocol: "HTTP/1.1",
			},
		},
		MetadataContext: &corev3.Metadata{},
	}}
}

// rawHeaders turns a request into what Envoy sends with encode_raw_headers:
// header_map with raw values instead of the headers map. extra entries are
// appended (a repeated header stays repeated).
func rawHeaders(req *authv3.CheckRequest, extra ...[2]string) *authv3.CheckRequest {
	hr := req.GetAttributes().GetRequest().GetHttp()
	hm := &corev3.HeaderMap{}
	keys := make([]string, 0, len(hr.Headers))
	for k := range hr.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: k, RawValue: []byte(hr.Headers[k])})
	}
	for _, kv := range extra {
		hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: kv[0], RawValue: []byte(kv[1])})
	}
	hr.Headers, hr.HeaderMap = nil, hm
	return req
}

func bearer(tok string) map[string]string { return map[string]string{"authorization": "Bearer " + tok} }

// okHeaders returns the headers an OK response sets, and those it removes.
func okHeaders(t *testing.T, resp *authv3.CheckResponse) (map[string]string, []string) {
	t.Helper()
	ok := resp.GetOkResponse()
	if ok == nil {
		t.Fatalf("Check() = %v, want an ok_response", resp)
	}
	set := map[string]string{}
	for _, h := range ok.GetHeaders() {
		// The deprecated append must stay unset: Envoy refuses it next to append_action.
		hasAppend := h.ProtoReflect().Has(h.ProtoReflect().Descriptor().Fields().ByName("append"))
		if h.GetAppendAction() != corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD || hasAppend {
			t.Errorf("header %s: append_action = %v, append set = %v, want OVERWRITE_IF_EXISTS_OR_ADD only",
				h.GetHeader().GetKey(), h.GetAppendAction(), hasAppend)
		}
		set[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
	}
	return set, ok.GetHeadersToRemove()
}

func TestGRPCCheckAllows(t *testing.T) {
	valid := mint(claims(nil))
	noScope := mint(claims(map[string]any{"scope": nil}))
	tests := []struct {
		name       string
		sources    []server.TokenSource
		req        *authv3.CheckRequest
		wantSet    map[string]string
		wantRemove []string
	}{
		{
			name:       "bearer-header",
			req:        envoyRequest("GET", "/orders/7", bearer(valid)),
			wantSet:    map[string]string{"x-auth-subject": "alice", "x-auth-scope": "orders:read orders:write"},
			wantRemove: []string{"authorization"},
		},
		{
			name:       "bearer-scheme-any-case",
			req:        envoyRequest("POST", "/orders", map[string]string{"authorization": "bearer " + valid}),
			wantSet:    map[string]string{"x-auth-subject": "alice", "x-auth-scope": "orders:read orders:write"},
			wantRemove: []string{"authorization"},
		},
		{
			name:       "raw-header-map",
			req:        rawHeaders(envoyRequest("GET", "/orders/7", bearer(valid))),
			wantSet:    map[string]string{"x-auth-subject": "alice", "x-auth-scope": "orders:read orders:write"},
			wantRemove: []string{"authorization"},
		},
		{
			// A forged identity header never survives: set claims overwrite
			// it, and an absent claim's header is removed.
			name:       "absent-claim-header-removed",
			req:        envoyRequest("GET", "/", map[string]string{"authorization": "Bearer " + noScope, "x-auth-scope": "admin"}),
			wantSet:    map[string]string{"x-auth-subject": "alice"},
			wantRemove: []string{"x-auth-scope", "authorization"},
		},
		{
			name:       "cookie-source",
			sources:    []server.TokenSource{{Header: "Authorization", Prefix: "Bearer "}, {Cookie: "session"}},
			req:        envoyRequest("GET", "/", map[string]string{"cookie": "theme=dark; session=" + valid}),
			wantSet:    map[string]string{"x-auth-subject": "alice", "x-auth-scope": "orders:read orders:write"},
			wantRemove: []string{"authorization"},
		},
		{
			name:       "query-source-from-path",
			sources:    []server.TokenSource{{Query: "access_token"}},
			req:        envoyRequest("GET", "/ws?room=1&access_token="+valid, nil),
			wantSet:    map[string]string{"x-auth-subject": "alice", "x-auth-scope": "orders:read orders:write"},
			wantRemove: []string{"authorization"},
		},
		{
			name:       "custom-header-source",
			sources:    []server.TokenSource{{Header: "X-Api-Token"}},
			req:        envoyRequest("GET", "/", map[string]string{"x-api-token": valid}),
			wantSet:    map[string]string{"x-auth-subject": "alice", "x-auth-scope": "orders:read orders:write"},
			wantRemove: []string{"authorization"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := startGRPC(t, newEnv(t, envConfig{sources: tc.sources}))
			resp, err := g.authz.Check(t.Context(), tc.req)
			if err != nil {
				t.Fatalf("Check() error = %v, want OK", err)
			}
			if c := codes.Code(resp.GetStatus().GetCode()); c != codes.OK {
				t.Fatalf("Check() status = %v, want OK", c)
			}
			if err := resp.ValidateAll(); err != nil {
				t.Errorf("CheckResponse.ValidateAll() = %v", err)
			}
			set, remove := okHeaders(t, resp)
			if !equalMaps(set, tc.wantSet) {
				t.Errorf("Check() headers = %v, want %v", set, tc.wantSet)
			}
			remove, twins := withoutTwins(remove, "X-Auth-Scope", "X-Auth-Subject")
			if !twins {
				t.Errorf("Check() headers_to_remove = %v, want every CGI twin of the claim headers", remove)
			}
			if !slices.Equal(remove, tc.wantRemove) {
				t.Errorf("Check() headers_to_remove = %v, want %v", remove, tc.wantRemove)
			}
		})
	}
}

// withoutTwins returns remove without the CGI twins (lower case) of the
// headers named, and whether each of them was there: an OK answer removes
// a client's copy under a twin (X_Auth_Subject) of every identity header.
func withoutTwins(remove []string, headers ...string) ([]string, bool) {
	var twins []string
	for _, h := range headers {
		for _, tw := range server.HeaderTwins(h) {
			twins = append(twins, strings.ToLower(tw))
		}
	}
	rest := slices.DeleteFunc(slices.Clone(remove), func(h string) bool { return slices.Contains(twins, h) })
	return rest, len(remove)-len(rest) == len(twins)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestGRPCCheckDenies(t *testing.T) {
	tok := tokens()
	noHTTP := &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{}}}
	tests := []struct {
		name      string
		req       *authv3.CheckRequest
		wantClass string
		noToken   bool // the challenge carries no error code (RFC 6750 §3.1)
	}{
		{"expired", envoyRequest("GET", "/", bearer(tok["expired"])), "expired", false},
		{"wrong-audience", envoyRequest("GET", "/", bearer(tok["wrong-audience"])), "wrong_audience", false},
		{"bad-signature", envoyRequest("GET", "/", bearer(tok["bad-signature"])), "bad_signature", false},
		{"unknown-kid", envoyRequest("GET", "/", bearer(tok["unknown-kid"])), "unknown_kid", false},
		{"unknown-issuer", envoyRequest("GET", "/", bearer(tok["unknown-issuer"])), "unknown_issuer", false},
		{"not-yet-valid", envoyRequest("GET", "/", bearer(mint(claims(map[string]any{"nbf": epoch.Add(time.Hour).Unix()})))), "not_yet_valid", false},
		{"missing-exp", envoyRequest("GET", "/", bearer(mint(claims(map[string]any{"exp": nil})))), "missing_claim", false},
		{"alg-none", envoyRequest("GET", "/", bearer("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.")), "alg_not_allowed", false},
		{"garbage", envoyRequest("GET", "/", bearer("not-a-jwt")), "malformed", false},
		{"too-large", envoyRequest("GET", "/", bearer(strings.Repeat("a", 20000))), "token_too_large", false},
		{"no-token", envoyRequest("GET", "/", nil), "missing_token", true},
		{"basic-auth", envoyRequest("GET", "/", map[string]string{"authorization": "Basic YTpi"}), "missing_token", true},
		{"repeated-raw-header", rawHeaders(envoyRequest("GET", "/", bearer(tok["valid"])), [2]string{"authorization", "Bearer " + tok["expired"]}), "malformed", false},
		{"no-attributes", &authv3.CheckRequest{}, "missing_token", true},
		{"no-http-attributes", noHTTP, "missing_token", true},
	}
	// Tokens of other kinds (logout tokens, SETs, DPoP proofs, JWT
	// introspection answers) are never access tokens.
	for name, kt := range servertest.KindTokens() {
		tests = append(tests, struct {
			name      string
			req       *authv3.CheckRequest
			wantClass string
			noToken   bool
		}{"kind-" + name, envoyRequest("GET", "/", bearer(kt)), "wrong_type", false})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := startGRPC(t, newEnv(t, envConfig{}))
			resp, err := g.authz.Check(t.Context(), tc.req)
			if err != nil {
				t.Fatalf("Check() error = %v, want a DENIED response", err)
			}
			if c := codes.Code(resp.GetStatus().GetCode()); c != codes.Unauthenticated {
				t.Errorf("Check() status = %v, want Unauthenticated", c)
			}
			if err := resp.ValidateAll(); err != nil {
				t.Errorf("CheckResponse.ValidateAll() = %v", err)
			}
			dr := resp.GetDeniedResponse()
			if dr == nil {
				t.Fatalf("Check() = %v, want a denied_response", resp)
			}
			if dr.GetStatus().GetCode() != typev3.StatusCode_Unauthorized {
				t.Errorf("denied status = %v, want Unauthorized (401)", dr.GetStatus().GetCode())
			}
			hs := map[string]string{}
			for _, h := range dr.GetHeaders() {
				hs[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
			}
			wantWWW := `Bearer error="invalid_token", error_description="` + tc.wantClass + `"`
			if tc.noToken {
				wantWWW = `Bearer realm="jwksverify"`
			}
			if hs["www-authenticate"] != wantWWW {
				t.Errorf("www-authenticate = %q, want %q", hs["www-authenticate"], wantWWW)
			}
			if hs["content-type"] != "application/json" {
				t.Errorf("content-type = %q, want application/json", hs["content-type"])
			}
			var body struct {
				Valid bool   `json:"valid"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal([]byte(dr.GetBody()), &body); err != nil || body.Valid || body.Error != tc.wantClass {
				t.Errorf("denied body = %q (%v), want {valid:false, error:%q}", dr.GetBody(), err, tc.wantClass)
			}
			if strings.Contains(dr.GetBody(), "eyJ") || strings.Contains(resp.GetStatus().GetMessage(), "eyJ") {
				t.Errorf("denied response echoes a token: %v", resp)
			}
		})
	}
}

func TestGRPCCheckKeysUnavailable(t *testing.T) {
	g := startGRPC(t, newEnv(t, envConfig{}))
	resp, err := g.authz.Check(t.Context(), envoyRequest("GET", "/", bearer(tokens()["keys-unavailable"])))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("Check() = %v, %v; want the gRPC error Unavailable (an ext_authz error, not a deny)", resp, err)
	}
	if msg := status.Convert(err).Message(); msg != "keys_unavailable" {
		t.Errorf("Check() error message = %q, want keys_unavailable", msg)
	}
}

// TestGRPCCheckGolden stores Check's answers as protojson (Envoy's field
// names) for docs/API.md: allow, deny, a request without a token, and the
// UNAVAILABLE error.
func TestGRPCCheckGolden(t *testing.T) {
	tok := tokens()
	tests := []struct {
		name string
		req  *authv3.CheckRequest
	}{
		{"grpc-check-valid", envoyRequest("GET", "/orders/42", bearer(tok["valid"]))},
		{"grpc-check-expired", envoyRequest("GET", "/orders/42", bearer(tok["expired"]))},
		{"grpc-check-no-token", envoyRequest("GET", "/orders/42", nil)},
		{"grpc-check-keys-unavailable", envoyRequest("GET", "/orders/42", bearer(tok["keys-unavailable"]))},
	}
	g := startGRPC(t, newEnv(t, envConfig{}))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := g.authz.Check(t.Context(), tc.req)
			var doc []byte
			if err != nil {
				st := status.Convert(err)
				doc, err = json.Marshal(map[string]any{"error": map[string]string{"code": st.Code().String(), "message": st.Message()}})
			} else {
				doc, err = protojson.MarshalOptions{UseProtoNames: true}.Marshal(resp)
			}
			if err != nil {
				t.Fatal(err)
			}
			checkGoldenJSON(t, tc.name, doc)
		})
	}
}

// TestGRPCCheckNeverLogsTokens checks the log lines of rejected gRPC checks.
func TestGRPCCheckNeverLogsTokens(t *testing.T) {
	e := newEnv(t, envConfig{})
	g := startGRPC(t, e)
	tok := tokens()
	for _, name := range []string{"expired", "bad-signature", "unknown-kid", "keys-unavailable"} {
		_, _ = g.authz.Check(t.Context(), envoyRequest("GET", "/", bearer(tok[name])))
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"endpoint":"grpc"`) {
		t.Errorf("logs = %s, want lines with endpoint grpc", logs)
	}
	for name, s := range tok {
		for seg := range strings.SplitSeq(s, ".") {
			if len(seg) >= 16 && strings.Contains(logs, seg) {
				t.Errorf("logs contain a segment of the %s token", name)
			}
		}
	}
}

// TestGRPCCheckMetrics checks that gRPC decisions are counted like the
// others, under the grpc endpoint.
func TestGRPCCheckMetrics(t *testing.T) {
	e := newEnv(t, envConfig{})
	g := startGRPC(t, e)
	tok := tokens()
	for _, name := range []string{"valid", "valid", "expired"} {
		if _, err := g.authz.Check(t.Context(), envoyRequest("GET", "/", bearer(tok[name]))); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "jwksverify_verify_total":
				got[label(m, "issuer")+" "+label(m, "class")] = m.GetCounter().GetValue()
			case "jwksverify_verify_duration_seconds":
				got["duration "+label(m, "endpoint")] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	for k, want := range map[string]float64{issuerA + " valid": 2, issuerA + " expired": 1, "duration grpc": 3} {
		if got[k] != want {
			t.Errorf("metric %q = %v, want %v", k, got[k], want)
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestGRPCCheckConcurrent runs checks in parallel (meaningful under -race).
func TestGRPCCheckConcurrent(t *testing.T) {
	g := startGRPC(t, newEnv(t, envConfig{tokenCache: 100}))
	tok := tokens()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			name := "valid"
			if i%2 == 1 {
				name = "expired"
			}
			resp, err := g.authz.Check(t.Context(), envoyRequest("GET", "/", bearer(tok[name])))
			switch {
			case err != nil:
				errs <- err
			case (name == "valid") != (resp.GetOkResponse() != nil):
				errs <- errors.New("wrong verdict for " + name)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestGRPCHealth(t *testing.T) {
	if authorizationService != authv3.Authorization_ServiceDesc.ServiceName {
		t.Fatalf("authorizationService = %q, want %q", authorizationService, authv3.Authorization_ServiceDesc.ServiceName)
	}
	tests := []struct {
		name    string
		cfg     envConfig
		service string
		want    healthpb.HealthCheckResponse_ServingStatus
		wantErr codes.Code
	}{
		{"ready-overall", envConfig{noDown: true}, "", healthpb.HealthCheckResponse_SERVING, codes.OK},
		{"ready-ext-authz", envConfig{noDown: true}, "envoy.service.auth.v3.Authorization", healthpb.HealthCheckResponse_SERVING, codes.OK},
		{"issuer-without-keys", envConfig{}, "", healthpb.HealthCheckResponse_NOT_SERVING, codes.OK},
		{"no-keys-yet", envConfig{noDown: true, emptyKeys: true}, "envoy.service.auth.v3.Authorization", healthpb.HealthCheckResponse_NOT_SERVING, codes.OK},
		{"unknown-service", envConfig{noDown: true}, "orders.v1.Orders", healthpb.HealthCheckResponse_SERVICE_UNKNOWN, codes.NotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := startGRPC(t, newEnv(t, tc.cfg))
			resp, err := g.health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: tc.service})
			if status.Code(err) != tc.wantErr {
				t.Fatalf("Check(%q) error = %v, want %v", tc.service, err, tc.wantErr)
			}
			if err == nil && resp.GetStatus() != tc.want {
				t.Errorf("Check(%q) = %v, want %v", tc.service, resp.GetStatus(), tc.want)
			}
		})
	}
}

// TestGRPCHealthFollowsReadiness checks that health is current without a
// background goroutine: keys arriving, then going stale, change the answer.
func TestGRPCHealthFollowsReadiness(t *testing.T) {
	e := newEnv(t, envConfig{noDown: true, emptyKeys: true})
	g := startGRPC(t, e)
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		resp, err := g.health.Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetStatus()
	}
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("before keys: Check() = %v, want NOT_SERVING", got)
	}
	e.keysA.Store(keySet(t))
	if got := check(); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("with keys: Check() = %v, want SERVING", got)
	}
	e.clock.Add(25 * time.Hour) // past UsableUntil (24h)
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("stale keys: Check() = %v, want NOT_SERVING", got)
	}
	list, err := g.health.List(t.Context(), &healthpb.HealthListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"", "envoy.service.auth.v3.Authorization"} {
		if got := list.GetStatuses()[svc].GetStatus(); got != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("List()[%q] = %v, want NOT_SERVING", svc, got)
		}
	}
}

func TestGRPCHealthWatch(t *testing.T) {
	e := newEnv(t, envConfig{noDown: true, emptyKeys: true})
	g := startGRPC(t, e, func(g *grpc.Server) {
		healthpb.RegisterHealthServer(g, &healthGRPC{s: func() *server.Server { return e.srv }, interval: 2 * time.Millisecond})
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	stream, err := g.health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recv := func() healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv() = %v", err)
		}
		return resp.GetStatus()
	}
	if got := recv(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("first Watch status = %v, want NOT_SERVING", got)
	}
	e.keysA.Store(keySet(t))
	if got := recv(); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("after keys: Watch status = %v, want SERVING", got)
	}
	e.keysA.Store(nil)
	if got := recv(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("after losing keys: Watch status = %v, want NOT_SERVING", got)
	}
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("Recv() after cancel = %v, want Canceled", err)
	}
}

// BenchmarkGRPCCheck measures the ext_authz handler itself (no network):
// building the token view of Envoy's attributes, deciding, and building the
// answer, for a repeated (cached) token with the headers map ("handler")
// and with encode_raw_headers' header_map, and for a denied token;
// "marshaled" also encodes what Register's handler sends (a shared
// answer's encoding made once, checkHandler; the dynamic_metadata's claims
// are part of every OK answer's bytes). The allocations are deterministic.
func BenchmarkGRPCCheck(b *testing.B) {
	tok := mint(claims(nil))
	for _, bc := range []struct {
		name    string
		req     *authv3.CheckRequest
		marshal bool
		want    codes.Code
	}{
		{"handler", envoyRequest("GET", "/orders/7", bearer(tok)), false, codes.OK},
		{"marshaled", envoyRequest("GET", "/orders/7", bearer(tok)), true, codes.OK},
		{"header-map", rawHeaders(envoyRequest("GET", "/orders/7", bearer(tok))), false, codes.OK},
		{"denied", envoyRequest("GET", "/orders/7", bearer(tokens()["expired"])), false, codes.Unauthenticated},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEnv(b, envConfig{tokenCache: 1000, quiet: true})
			a := newAuthzGRPC(e.srv)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				resp, wire, err := a.check(ctx, bc.req)
				if err != nil || codes.Code(resp.GetStatus().GetCode()) != bc.want {
					b.Fatalf("Check() = %v, %v; want %v", resp, err, bc.want)
				}
				if bc.marshal {
					if wire != nil {
						resp = wire
					}
					if _, err := proto.Marshal(resp); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// FuzzGRPCCheck feeds arbitrary attributes to the ext_authz handler: it must
// never panic, and every answer is an OK or a 401 DENIED response (the
// issuer has keys, so "unavailable" is never right), or, when the original
// request is ambiguous (a path with a NUL, a dot segment…, or a method
// override that is not a method), a 403 DENIED: refused whatever the token.
func FuzzGRPCCheck(f *testing.F) {
	valid := mint(claims(nil))
	f.Add("/orders/7", "authorization", "Bearer "+valid, "cookie", "session="+valid, false)
	f.Add("/ws?access_token="+valid+"&access_token=x", "x-api-token", valid, "authorization", "Basic YTpi", true)
	f.Add("?", "authorization", "Bearer ", "cookie", ";;=;", true)
	e := newEnv(f, envConfig{noDown: true, sources: []server.TokenSource{
		{Header: "Authorization", Prefix: "Bearer "}, {Header: "X-Api-Token"}, {Cookie: "session"}, {Query: "access_token"},
	}})
	a := newAuthzGRPC(e.srv)
	f.Fuzz(func(t *testing.T, path, k1, v1, k2, v2 string, raw bool) {
		req := envoyRequest("GET", path, map[string]string{k1: v1, k2: v2})
		if raw {
			req = rawHeaders(req, [2]string{k1, v2})
		}
		resp, err := a.Check(t.Context(), req)
		if err != nil {
			t.Fatalf("Check() error = %v, want a verdict", err)
		}
		_, oerr := original(req.GetAttributes().GetRequest().GetHttp())
		ambiguous := errors.Is(oerr, request.ErrAmbiguous)
		switch c := codes.Code(resp.GetStatus().GetCode()); {
		case c == codes.OK && resp.GetOkResponse() != nil && !ambiguous:
		case c == codes.Unauthenticated && resp.GetDeniedResponse().GetStatus().GetCode() == typev3.StatusCode_Unauthorized:
		case c == codes.PermissionDenied && resp.GetDeniedResponse().GetStatus().GetCode() == typev3.StatusCode_Forbidden && ambiguous:
		default:
			t.Fatalf("Check() = %v (original request: %v), want OK or a 401 DENIED, or a 403 DENIED for an ambiguous request", resp, oerr)
		}
	})
}

// TestGRPCQueryTokenAmbiguity: the query of :path is read the way the most
// lenient upstream would. A parameter repeated behind a ';' (which
// url.ParseQuery drops) or in another escaping is malformed; headers that
// another preset reads are never a source.
func TestGRPCQueryTokenAmbiguity(t *testing.T) {
	valid, forged := tokens()["valid"], "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9."
	e := newEnv(t, envConfig{sources: []server.TokenSource{{Query: "access_token"}}})
	g := startGRPC(t, e)
	tests := []struct {
		name   string
		req    *authv3.CheckRequest
		wantOK bool
	}{
		{"single", envoyRequest("GET", "/ws?room=1&access_token="+valid, nil), true},
		{"semicolon-hides-second", envoyRequest("GET", "/ws?access_token="+valid+"&access_token="+forged+";", nil), false},
		{"semicolon-split", envoyRequest("GET", "/ws?access_token="+valid+";access_token="+forged, nil), false},
		{"escaped-name", envoyRequest("GET", "/ws?access_token="+valid+"&access%5Ftoken="+forged, nil), false},
		{"empty-first", envoyRequest("GET", "/ws?access_token=&access_token="+valid, nil), false},
		{"other-preset-header", envoyRequest("GET", "/ws", map[string]string{"x-original-uri": "/?access_token=" + valid}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := g.authz.Check(t.Context(), tc.req)
			if err != nil {
				t.Fatalf("Check() error = %v", err)
			}
			if ok := codes.Code(resp.GetStatus().GetCode()) == codes.OK; ok != tc.wantOK {
				t.Fatalf("Check() OK = %v, want %v (%v)", ok, tc.wantOK, resp.GetStatus())
			}
		})
	}
}
