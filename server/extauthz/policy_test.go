package extauthz

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	rpccode "google.golang.org/genproto/googleapis/rpc/code"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/server/metrics"
)

// TestCheckPolicies: over a real gRPC connection with Envoy's protos,
// context_extensions choose the policy before the routes; a refusal is
// PERMISSION_DENIED with HTTP 403 and the insufficient_scope challenge; an
// unknown named policy is denied; OK carries the claims in
// dynamic_metadata.
func TestCheckPolicies(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 10})
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{
			{Name: "write", Scopes: policy.Scopes{All: []string{"orders:admin"}}},
			{Name: "read", Scopes: policy.Scopes{Any: []string{"orders:read"}}},
		},
		Routes: []policy.Route{{Path: "/orders/**", Policy: "write"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(metrics.Options{Verifier: ve.V, Registry: prometheus.NewRegistry(), Policies: set})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Verifier: ve.V, ClaimsToHeaders: servertest.ClaimsToHeaders(), Policies: set, Proxy: "envoy",
		Metrics: m, Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil)), Now: ve.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	g := startGRPC(t, &env{clock: ve.Clock, keysA: ve.KeysA, v: ve.V, srv: srv, logs: ve.Logs})
	tok := mint(claims(nil)) // scope "orders:read orders:write"
	for _, tt := range []struct {
		name     string
		path     string
		ext      string
		wantCode rpccode.Code
		wantHTTP typev3.StatusCode
		wantWWW  string
	}{
		{"routes-refuse", "/orders/1", "", rpccode.Code_PERMISSION_DENIED, typev3.StatusCode_Forbidden, `Bearer error="insufficient_scope", scope="orders:admin"`},
		{"extension-allows", "/orders/1", "read", rpccode.Code_OK, 0, ""},
		{"extension-unknown", "/orders/1", "nope", rpccode.Code_PERMISSION_DENIED, typev3.StatusCode_Forbidden, `Bearer error="insufficient_scope"`},
		{"default-any-token", "/other", "", rpccode.Code_OK, 0, ""},
		{"ambiguous-path", "/public/..%2Forders", "read", rpccode.Code_PERMISSION_DENIED, typev3.StatusCode_Forbidden, `Bearer error="insufficient_scope"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := envoyRequest("GET", tt.path, map[string]string{"authorization": "Bearer " + tok})
			if tt.ext != "" {
				req.Attributes.ContextExtensions = map[string]string{"policy": tt.ext}
			}
			resp, err := g.authz.Check(t.Context(), req)
			if err != nil || rpccode.Code(resp.GetStatus().GetCode()) != tt.wantCode {
				t.Fatalf("Check() = %v, %v; want code %v", resp, err, tt.wantCode)
			}
			if tt.wantCode != rpccode.Code_OK {
				dr := resp.GetDeniedResponse()
				var www string
				for _, h := range dr.GetHeaders() {
					if h.GetHeader().GetKey() == "www-authenticate" {
						www = h.GetHeader().GetValue()
					}
				}
				if dr.GetStatus().GetCode() != tt.wantHTTP || www != tt.wantWWW {
					t.Fatalf("denied %v %q, want %v %q", dr.GetStatus().GetCode(), www, tt.wantHTTP, tt.wantWWW)
				}
				return
			}
			md := resp.GetDynamicMetadata().GetFields()[MetadataNamespace].GetStructValue().GetFields()
			if md["issuer"].GetStringValue() != servertest.IssuerA || md["policy"].GetStringValue() != tt.ext ||
				md["claims"].GetStructValue().GetFields()["sub"].GetStringValue() != "alice" {
				t.Fatalf("dynamic_metadata = %v", resp.GetDynamicMetadata())
			}
		})
	}
}
