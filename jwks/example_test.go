package jwks_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/verify"
)

// These examples build their keys with crypto/* and serve them as an
// identity provider would; copy them as they are.

// ecJWK is the public JWK of an EC P-256 key.
func ecJWK(key *ecdsa.PrivateKey, kid string) map[string]any {
	p, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		panic(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	return map[string]any{"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
		"x": b64(p[1:33]), "y": b64(p[33:])}
}

// rsaJWK is the public JWK of an RSA key.
func rsaJWK(key *rsa.PrivateKey, kid string) map[string]any {
	b64 := base64.RawURLEncoding.EncodeToString
	return map[string]any{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}
}

// jwksDocument is a JWKS: {"keys": [...]}.
func jwksDocument(keys ...map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		panic(err)
	}
	return b
}

// signES256 is an ES256 token with the given kid, as the identity provider
// would sign it (here with golang-jwt).
func signES256(key *ecdsa.PrivateKey, kid string, claims jwt.MapClaims) string {
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	t.Header["kid"] = kid
	token, err := t.SignedString(key)
	if err != nil {
		panic(err)
	}
	return token
}

// A Fetcher keeps an issuer's key set fresh in the background; a Verifier
// checks tokens against it. This is what `jwksverify serve` wires for each
// issuer of its configuration.
func Example() {
	signing, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=900") // the refresh interval
		w.Write(jwksDocument(ecJWK(signing, "2026-12")))
	}))
	defer idp.Close()

	// Plain http is accepted for loopback hosts only (a test IdP here);
	// a real issuer's JWKS URL is https.
	fetcher, err := jwks.New(jwks.Options{URL: idp.URL + "/jwks.json"})
	if err != nil {
		panic(err)
	}
	defer fetcher.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fetcher.Ready(ctx); err != nil { // the first fetch
		fmt.Println("keys unavailable:", err)
		return
	}

	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{
		Issuer:    "https://idp.example.com/",
		Keys:      fetcher.Keys(), // the fetcher publishes, the verifier reads
		Refresher: fetcher,        // an unknown kid asks for a (rate-limited) refresh
		Audiences: []string{"api://orders"},
	}}})
	if err != nil {
		panic(err)
	}
	token := signES256(signing, "2026-12", jwt.MapClaims{
		"iss": "https://idp.example.com/", "sub": "alice", "aud": "api://orders",
		"exp": time.Now().Add(time.Hour).Unix(),
	})
	res, err := v.Verify(ctx, token)
	if err != nil {
		fmt.Println("rejected:", verify.Class(err))
		return
	}
	fmt.Println(res.Subject, res.Alg, res.Kid)
	// Output: alice ES256 2026-12
}

// Parse reads a JWKS document once: keys that can never verify (too weak,
// of an unknown type, meant for encryption) are skipped with the reason,
// not fatal, so one bad key does not take the issuer's others down.
func ExampleParse() {
	current, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	legacy, _ := rsa.GenerateKey(rand.Reader, 1024)
	doc := jwksDocument(ecJWK(current, "current"), rsaJWK(legacy, "legacy"))

	keys, skipped, err := jwks.Parse(doc, jwks.ParseOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range keys {
		fmt.Println("key", k.Kid, k.Kty, k.Crv, k.Alg)
	}
	for _, s := range skipped {
		fmt.Println("skipped", s.Kid, s.Reason)
	}
	// Output:
	// key current EC P-256 ES256
	// skipped legacy cache: weak key: RSA key of 1024 bits (minimum 2048)
}

// A service that verified tokens with keyfunc.NewDefaultCtx changes the line
// that builds k; its jwt.Parse calls stay as they were.
func ExampleFetcher_Keyfunc() {
	signing, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(jwksDocument(ecJWK(signing, "key-1")))
	}))
	defer idp.Close()

	fetcher, err := jwks.New(jwks.Options{URL: idp.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer fetcher.Close()
	if err := fetcher.Ready(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	k := fetcher.Keyfunc() // was: k, err := keyfunc.NewDefaultCtx(ctx, []string{jwksURL})

	signed := signES256(signing, "key-1", jwt.MapClaims{
		"iss": "https://idp.example.com/", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	token, err := jwt.Parse(signed, k.Keyfunc, jwt.WithValidMethods([]string{"ES256"}),
		jwt.WithIssuer("https://idp.example.com/"), jwt.WithExpirationRequired())
	sub, _ := token.Claims.GetSubject()
	fmt.Println(token.Valid, sub, err)

	// An HS256 token naming the EC key's kid is refused before any signature check.
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "mallory"})
	hs.Header["kid"] = "key-1"
	forged, _ := hs.SignedString([]byte("guessed"))
	_, err = jwt.Parse(forged, k.Keyfunc)
	fmt.Println(verify.Class(err))
	// Output:
	// true alice <nil>
	// alg_not_allowed
}
