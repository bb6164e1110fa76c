package testkeys

import (
	"encoding/json"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMintVerifiesWithGolangJWT(t *testing.T) {
	for _, alg := range Algorithms {
		t.Run(alg, func(t *testing.T) {
			tok := Mint(alg, SigningKey(alg), map[string]any{"kid": "k1"}, map[string]any{"sub": "alice"})
			var verifyKey any = Secret()
			if n := NameForAlg(alg); n != "" {
				verifyKey = Public(n)
			}
			if _, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return verifyKey, nil }); err != nil {
				t.Fatalf("Parse() = %v, want nil", err)
			}
		})
	}
}

func TestJWKSHasEveryKey(t *testing.T) {
	doc := JWKS(JWK{Key: Private(RSA2048A), Kid: "a", Alg: "RS256", Use: "sig"},
		JWK{Key: Private(EC256A), Kid: "b"}, JWK{Key: Private(Ed25519A), Kid: "c", KeyOps: []string{"verify"}})
	var got struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Keys) != 3 {
		t.Fatalf("JWKS() has %d keys, want 3", len(got.Keys))
	}
	for _, k := range got.Keys {
		if _, ok := k["d"]; ok {
			t.Errorf("JWKS() key %v carries private member d", k["kid"])
		}
	}
}
