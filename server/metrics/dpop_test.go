package metrics

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/request"
)

// TestUseDPoP: jwksverify_dpop_proof_keys_total reports the checker
// UseDPoP gives — a client's first proof parses its key, its later ones
// reuse it — and is left out without one.
func TestUseDPoP(t *testing.T) {
	e := newEnv(t, envConfig{})
	if body := get(e.m.Handler(), "/metrics").Body.String(); strings.Contains(body, "jwksverify_dpop_proof_keys_total") {
		t.Error("/metrics has the DPoP key metric without a checker")
	}
	mem, err := replay.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := dpop.New(dpop.Options{Replay: mem})
	if err != nil {
		t.Fatal(err)
	}
	key, err := cache.NewKey(testkeys.Public(testkeys.EC256A), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	const token = "access-token"
	ath := sha256.Sum256([]byte(token))
	now := time.Now()
	orig := request.Original{Method: "GET", Scheme: "https", Host: "api.example.com", Path: "/orders"}
	for i := range 3 {
		proof := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A),
			map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256A)})},
			map[string]any{"jti": fmt.Sprint("proof-", i), "htm": "GET", "htu": "https://api.example.com/orders",
				"iat": now.Unix(), "ath": base64.RawURLEncoding.EncodeToString(ath[:])})
		if _, err := ck.Check(context.Background(), dpop.Input{Proofs: []string{proof}, Request: orig, AccessToken: token,
			JKT: key.Thumbprint, Issuer: "https://idp.example.com/"}, now); err != nil {
			t.Fatalf("proof %d: %v", i, err)
		}
	}
	e.m.UseDPoP(ck)
	body := get(e.m.Handler(), "/metrics").Body.String()
	for _, line := range []string{
		`jwksverify_dpop_proof_keys_total{result="parsed"} 1`,
		`jwksverify_dpop_proof_keys_total{result="reused"} 2`,
	} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}
