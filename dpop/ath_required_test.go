package dpop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// TestCheckWithoutAccessTokenIsNotAnAllow: a caller that builds an
// Input for a bound token (JKT set: it holds the token) but forgets
// AccessToken must not have a proof accepted without any ath, nor a proof
// whose ath names another token. RFC 9449 §4.3 step 12 / §7: a proof
// presented with an access token must carry ath, and it must match.
func TestCheckWithoutAccessTokenIsNotAnAllow(t *testing.T) {
	client, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p, _ := client.PublicKey.Bytes()
	b64 := base64.RawURLEncoding.EncodeToString
	jwk := map[string]string{"kty": "EC", "crv": "P-256", "x": b64(p[1:33]), "y": b64(p[33:])}
	canonical, _ := json.Marshal(jwk)
	sum := sha256.Sum256(canonical)
	jkt := b64(sum[:])
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

	otherToken := sha256.Sum256([]byte("some other access token"))
	for name, claims := range map[string]jwt.MapClaims{
		"no ath":             {"jti": "j-noath", "htm": "GET", "htu": "https://api.example.com/orders", "iat": now.Unix()},
		"ath of other token": {"jti": "j-other", "htm": "GET", "htu": "https://api.example.com/orders", "iat": now.Unix(), "ath": b64(otherToken[:])},
	} {
		t.Run(name, func(t *testing.T) {
			proof := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
			proof.Header["typ"] = "dpop+jwt"
			proof.Header["jwk"] = jwk
			signed, err := proof.SignedString(client)
			if err != nil {
				t.Fatal(err)
			}
			store, _ := replay.NewMemory(1000)
			checker, err := dpop.New(dpop.Options{Replay: store})
			if err != nil {
				t.Fatal(err)
			}
			original, oerr := request.FromParts("GET", "https", "api.example.com", "/orders")
			in := dpop.Input{Proofs: []string{signed}, Request: original, RequestErr: oerr, JKT: jkt, Issuer: "https://idp.example.com/"}
			got, err := checker.Check(context.Background(), in, now)
			if err == nil {
				t.Fatalf("Check(Input without AccessToken) accepted a proof (%+v): ath was never checked; want an error (invalid_dpop_proof)", got)
			}
			if !errorsIsRejected(err) {
				t.Fatalf("Check() = %v, want a rejection", err)
			}
		})
	}
}

func errorsIsRejected(err error) bool { return verify.Class(err) != "" }
