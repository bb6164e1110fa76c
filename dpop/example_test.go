package dpop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// A DPoP-bound access token (RFC 9449) names the thumbprint of the client's
// key in cnf.jkt; each request carries a fresh proof signed with that key,
// for that method and URL. The checker verifies the proof against the
// request and the token, and refuses a proof used twice.
func ExampleChecker_Check() {
	client, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p, _ := client.PublicKey.Bytes() // 0x04 || X || Y
	b64 := base64.RawURLEncoding.EncodeToString
	jwk := map[string]string{"kty": "EC", "crv": "P-256", "x": b64(p[1:33]), "y": b64(p[33:])}
	// RFC 7638 thumbprint: the required members in lexicographic order.
	canonical, _ := json.Marshal(jwk) // encoding/json sorts map keys
	sum := sha256.Sum256(canonical)
	jkt := b64(sum[:]) // what the authorization server put in the token's cnf.jkt

	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	accessToken := "eyJhbGciOiJFUzI1NiJ9.e30.c2ln" // the verified access token, as sent
	ath := sha256.Sum256([]byte(accessToken))
	proof := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"jti": "e1j3V_bKic8-LAEB", "htm": "POST", "htu": "https://api.example.com/orders",
		"iat": now.Unix(), "ath": b64(ath[:]),
	})
	proof.Header["typ"] = "dpop+jwt"
	proof.Header["jwk"] = jwk
	signed, err := proof.SignedString(client)
	if err != nil {
		panic(err)
	}

	store, _ := replay.NewMemory(100_000) // replay.NewRedis to share it between replicas
	checker, err := dpop.New(dpop.Options{Replay: store})
	if err != nil {
		panic(err)
	}
	original, err := request.FromParts("POST", "https", "api.example.com", "/orders")
	in := dpop.Input{
		Proofs: []string{signed}, Request: original, RequestErr: err,
		AccessToken: accessToken, JKT: jkt, Issuer: "https://idp.example.com/",
	}
	got, err := checker.Check(context.Background(), in, now)
	fmt.Println(got.Alg, got.JTI, err)

	_, err = checker.Check(context.Background(), in, now.Add(time.Second)) // the same proof again
	fmt.Println(verify.Class(err))
	// Output:
	// ES256 e1j3V_bKic8-LAEB <nil>
	// invalid_dpop_proof
}
