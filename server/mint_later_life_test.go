package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// newMintDPoPEnv is newMintEnv with a DPoP checker and issuer A's DPoP
// constraint mode.
func newMintDPoPEnv(t *testing.T, mode ConstraintMode) *env {
	t.Helper()
	checker := newDPoPChecker(t)
	e, _ := newMintEnv(t, nil, func(o *Options) {
		o.SenderConstraints = map[string]SenderConstraint{issuerA: {DPoP: mode}}
		o.DPoP = checker
	})
	return e
}

// TestMintedTokenLaterLife (red team, minted tokens): a token jwksverify
// minted is not an access token of any configured issuer here (mint.issuer
// is not one), so handed back to forward-auth it is refused and nothing is
// minted from it; a token of another kind (events), or a bound token
// without its proof, is refused before the mint stage, at forward-auth and
// at /v1/verify with "mint": true alike.
func TestMintedTokenLaterLife(t *testing.T) {
	e := newMintDPoPEnv(t, ConstraintOptional)
	w := do(e.handler, nginxAuthz("GET", "/orders/1", tokens()["valid"], nil))
	minted, ok := strings.CutPrefix(w.Header().Get("Authorization"), "Bearer ")
	if w.Code != http.StatusOK || !ok {
		t.Fatalf("forward-auth = %d, Authorization %q; want 200 and a minted token", w.Code, w.Header().Get("Authorization"))
	}
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"minted-token-handed-back", minted},
		{"logout-token-shape", mint(claims(map[string]any{"events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}}}))},
		{"dpop-bound-without-proof", mint(claims(map[string]any{"cnf": map[string]any{"jkt": jktOf(t, testkeys.EC256B)}}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(e.handler, nginxAuthz("GET", "/orders/1", tc.token, nil))
			if w.Code != http.StatusUnauthorized || w.Header().Get("Authorization") != "" {
				t.Errorf("forward-auth = %d, Authorization %q; want 401 and nothing minted", w.Code, w.Header().Get("Authorization"))
			}
			b, _ := json.Marshal(map[string]any{"token": tc.token, "policy": "orders-read", "mint": true})
			w = do(e.handler, postJSON("/v1/verify", string(b)))
			if strings.Contains(w.Body.String(), `"minted"`) || strings.Contains(w.Body.String(), `"valid":true`) {
				t.Errorf("/v1/verify mint = %d %s; want invalid and nothing minted", w.Code, w.Body)
			}
		})
	}
}
