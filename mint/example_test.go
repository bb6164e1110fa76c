package mint_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/verify"
)

// A minter over a keys file of one P-256 key mints an at+jwt for the
// upstream from a verified source token, and publishes the key's public
// part only.
func Example() {
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwk, _ := jwkset.NewJWKFromKey(priv, jwkset.JWKOptions{
		Marshal:  jwkset.JWKMarshalOptions{Private: true},
		Metadata: jwkset.JWKMetadataOptions{KID: "k1"},
	})
	doc, _ := json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk.Marshal()}})
	dir, _ := os.MkdirTemp("", "mint")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mint.jwks")
	_ = os.WriteFile(path, doc, 0o600)

	m, err := mint.New(mint.Options{Issuer: "https://jwksverify.internal", KeysFile: path, SigningKid: "k1", TTL: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	p, _ := mint.NewPolicy(mint.PolicySpec{Audience: "orders-service", Claims: map[string]string{"tenant": "tid"}})

	now := time.Now()
	src := &verify.Result{Claims: json.RawMessage(`{"sub":"alice","azp":"web","tid":"t-1","email":"a@example.com"}`), ExpiresAt: now.Add(time.Hour)}
	tok, err := m.Mint("the caller's token", src, p, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.HasPrefix(tok.Value[0], "Bearer "), tok.Kid, tok.ExpiresAt.Sub(now) <= time.Minute)
	fmt.Println(strings.Contains(string(m.JWKS()), `"d"`))
	// Output:
	// true k1 true
	// false
}
