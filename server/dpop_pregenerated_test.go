package server

import (
	"crypto/sha256"
	"encoding/base64"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestDPoPProofFarAheadRefused: a proof whose iat is centuries ahead (one
// an XSS payload or a compromised client pre-generates, RFC 9449 §11.2) is
// refused at forward-auth, not accepted now and again each time its
// replay entry expires.
func TestDPoPProofFarAheadRefused(t *testing.T) {
	e := newBindEnv(t, ConstraintOptional)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jktOf(t, testkeys.EC256B)}}))
	s := sha256.Sum256([]byte(bound))
	p := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256B),
		map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256B)})},
		map[string]any{"jti": "pre-1", "htm": "POST", "htu": htu, "iat": int64(20_000_000_000), "ath": base64.RawURLEncoding.EncodeToString(s[:])})
	for i := range 2 {
		w := do(e.handler, dpopRequest("DPoP "+bound, p))
		if w.Code != 401 {
			t.Errorf("use %d: %d, want 401 invalid_dpop_proof", i+1, w.Code)
		}
		e.clock.Add(10 * time.Minute) // past max_age + 2 × leeway: the replay entry is gone
	}
}
