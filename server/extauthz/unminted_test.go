package extauthz

import (
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rpccode "google.golang.org/genproto/googleapis/rpc/code"

	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestUnmintedHeaderRemoved: with mint.header X-Internal-Token, the OK
// answer of a policy that mints nothing removes x-internal-token, so that
// a client's own (forged, or replayed from another route) never reaches
// the upstream as if jwksverify had minted it (it was neither set nor
// removed); under the policy that mints, the minted token overwrites it.
func TestUnmintedHeaderRemoved(t *testing.T) {
	g, _ := startMinting(t, server.Options{ClaimsToHeaders: servertest.ClaimsToHeaders()}, "X-Internal-Token")
	tok := mint(claims(nil))
	for _, tt := range []struct {
		policy      string
		set, remove bool
	}{
		{"plain", false, true},
		{"minting", true, false},
	} {
		t.Run(tt.policy, func(t *testing.T) {
			req := envoyRequest("GET", "/orders/1", map[string]string{"authorization": "Bearer " + tok, "x-internal-token": "eyJforged.or.replayed"})
			req.Attributes.ContextExtensions = map[string]string{"policy": tt.policy}
			resp, err := g.authz.Check(t.Context(), req)
			if err != nil || rpccode.Code(resp.GetStatus().GetCode()) != rpccode.Code_OK {
				t.Fatalf("Check() = %v, %v; want OK", resp, err)
			}
			ok := resp.GetOkResponse()
			set := slices.ContainsFunc(ok.GetHeaders(), func(h *corev3.HeaderValueOption) bool { return h.GetHeader().GetKey() == "x-internal-token" })
			if removed := slices.Contains(ok.GetHeadersToRemove(), "x-internal-token"); set != tt.set || removed != tt.remove {
				t.Errorf("x-internal-token set %t, removed %t; want set %t, removed %t", set, removed, tt.set, tt.remove)
			}
		})
	}
}
