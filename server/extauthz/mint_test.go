package extauthz

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rpccode "google.golang.org/genproto/googleapis/rpc/code"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	mintpkg "github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// startMinting starts gRPC Check over a server made of o with a minter
// (into header; "" for Authorization) whose policy "minting" mints and
// "plain" does not, and the environment (its clock) it verifies in.
func startMinting(t *testing.T, o server.Options, header string) (*grpcEnv, *servertest.Env) {
	t.Helper()
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 10})
	set, err := policy.New(policy.Options{Policies: []policy.Spec{{Name: "minting"}, {Name: "plain"}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mint.jwks")
	if err := os.WriteFile(path, testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.Ed25519A), Kid: "m1"}), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := mintpkg.New(mintpkg.Options{Issuer: "https://jwksverify.internal", KeysFile: path, SigningKid: "m1", TTL: time.Minute, Header: header})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	mp, _ := mintpkg.NewPolicy(mintpkg.PolicySpec{Audience: "orders-service"})
	o.Verifier, o.Policies, o.Proxy, o.Minter, o.MintPolicies = ve.V, set, "envoy", m, map[string]*mintpkg.Policy{"minting": mp}
	o.Logger, o.Now = slog.New(slog.NewJSONHandler(ve.Logs, nil)), ve.Clock.Now
	srv, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return startGRPC(t, &env{clock: ve.Clock, keysA: ve.KeysA, v: ve.V, srv: srv, logs: ve.Logs}), ve
}

// TestCheckMints: an OK answer under a policy that mints carries the
// minted token in authorization (OVERWRITE_IF_EXISTS_OR_ADD, replacing the
// caller's), and does not remove authorization even with
// strip_authorization; a policy that mints nothing adds none.
func TestCheckMints(t *testing.T) {
	g, ve := startMinting(t, server.Options{StripAuthorization: true}, "")
	tok := mint(claims(nil))
	for _, tt := range []struct {
		policy     string
		wantMinted bool
	}{
		{"minting", true},
		{"plain", false},
	} {
		t.Run(tt.policy, func(t *testing.T) {
			req := envoyRequest("GET", "/orders/1", map[string]string{"authorization": "Bearer " + tok})
			req.Attributes.ContextExtensions = map[string]string{"policy": tt.policy}
			resp, err := g.authz.Check(t.Context(), req)
			if err != nil || rpccode.Code(resp.GetStatus().GetCode()) != rpccode.Code_OK {
				t.Fatalf("Check() = %v, %v; want OK", resp, err)
			}
			ok := resp.GetOkResponse()
			var authz *corev3.HeaderValueOption
			for _, h := range ok.GetHeaders() {
				if h.GetHeader().GetKey() == "authorization" {
					authz = h
				}
			}
			removed := strings.Join(ok.GetHeadersToRemove(), ",")
			if !tt.wantMinted {
				if authz != nil || removed != "authorization" {
					t.Errorf("headers %v, removed %q; want no token and authorization removed (strip_authorization)", ok.GetHeaders(), removed)
				}
				return
			}
			if authz == nil || !strings.HasPrefix(authz.GetHeader().GetValue(), "Bearer ey") || strings.Contains(authz.GetHeader().GetValue(), tok) ||
				authz.GetAppendAction() != corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD {
				t.Errorf("authorization = %v, want the minted token overwriting the caller's", authz)
			}
			if strings.Contains(removed, "authorization") {
				t.Errorf("headers_to_remove = %q removes the minted token", removed)
			}
		})
	}
	// The OK answer of a cached token is reused only while it is the
	// answer: once the minted token expires and another is minted, the
	// next answer carries the new one.
	t.Run("reminted-after-expiry", func(t *testing.T) {
		minted := func() string {
			req := envoyRequest("GET", "/orders/1", map[string]string{"authorization": "Bearer " + tok})
			req.Attributes.ContextExtensions = map[string]string{"policy": "minting"}
			resp, err := g.authz.Check(t.Context(), req)
			if err != nil || rpccode.Code(resp.GetStatus().GetCode()) != rpccode.Code_OK {
				t.Fatalf("Check() = %v, %v; want OK", resp, err)
			}
			for _, h := range resp.GetOkResponse().GetHeaders() {
				if h.GetHeader().GetKey() == "authorization" {
					return h.GetHeader().GetValue()
				}
			}
			t.Fatal("no minted authorization header")
			return ""
		}
		first, again := minted(), minted()
		if again != first {
			t.Errorf("second answer's minted token differs within its lifetime")
		}
		ve.Clock.Add(2 * time.Minute)
		if later := minted(); later == first {
			t.Errorf("after the minted token's expiry, the answer still carries it")
		}
	})
}
