package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestVerifyMintDPoPNeedsAPIAuth: /v1/verify's "request" is the caller's
// word, as its "client_cert" is. A DPoP proof names one request (htm,
// htu); the caller of /v1/verify names whichever request the proof it
// holds was made for — one to another resource server (host B), seen
// there or in its logs — and, with "mint": true, got a minted bearer
// token for this server's upstreams: a proof made for GET
// https://b.example.net/profile became a token for orders-service, which
// forward-auth here refuses the same proof for. "mint": true beside
// "dpop" is 400 without api_auth, as beside "client_cert"; a verdict
// alone still takes the proof.
func TestVerifyMintDPoPNeedsAPIAuth(t *testing.T) {
	e := newMintDPoPEnv(t, ConstraintRequired)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jktOf(t, testkeys.EC256B)}}))
	other := "https://b.example.net/profile" // a request to another resource server
	body := func(jti string, mintIt bool) string {
		b, _ := json.Marshal(map[string]any{"token": bound, "policy": "orders-read", "mint": mintIt,
			"dpop":    mintProof(testkeys.EC256B, "ES256", jti, "GET", other, bound),
			"request": map[string]string{"method": "GET", "scheme": "https", "host": "b.example.net", "path": "/profile"}})
		return string(b)
	}
	// Forward-auth here refuses that proof for its own request.
	w := do(e.handler, dpopRequest("DPoP "+bound, mintProof(testkeys.EC256B, "ES256", "fa", "GET", other, bound)))
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("forward-auth with a proof for another host: %d, want 401", w.Code)
	}
	w = do(e.handler, postJSON("/v1/verify", body("v1", true)))
	if w.Code != http.StatusBadRequest || strings.Contains(w.Body.String(), "minted") {
		t.Errorf("mint with a proof for a request the caller names: %d %s; want 400, nothing minted", w.Code, w.Body)
	}
	w = do(e.handler, postJSON("/v1/verify", body("v2", false)))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"valid":true`) {
		t.Errorf("verdict with the proof: %d %s; want a valid verdict", w.Code, w.Body)
	}
}
