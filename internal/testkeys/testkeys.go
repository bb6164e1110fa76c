// Package testkeys gives jwksverify's tests fixed, test-only signing keys,
// token minting and JWKS documents. The keys are embedded from testdata/ and
// protect nothing. It is internal and used only by tests, benchmarks and the
// demo issuer.
package testkeys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"embed"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

//go:embed testdata/*.pem testdata/hmac-secret.txt
var files embed.FS

// Names of the embedded private keys.
const (
	RSA2048A = "rsa2048-a"
	RSA2048B = "rsa2048-b"
	RSA2048C = "rsa2048-c"
	RSA3072  = "rsa3072"
	RSA4096  = "rsa4096"
	RSA2049  = "rsa2049-odd"  // odd bit length: the PSS encoding is one byte shorter than the modulus
	RSA1024  = "rsa1024-weak" // too weak: must be refused
	EC256A   = "ec256-a"
	EC256B   = "ec256-b"
	EC384    = "ec384"
	EC521    = "ec521"
	Ed25519A = "ed25519-a"
	Ed25519B = "ed25519-b"
)

// Algorithms lists the 13 JWS algorithms jwksverify supports (the issue text
// counts "15"; HS, RS and PS at 256/384/512, ES256/384/512 and EdDSA are 13).
var Algorithms = []string{
	"HS256", "HS384", "HS512",
	"RS256", "RS384", "RS512",
	"PS256", "PS384", "PS512",
	"ES256", "ES384", "ES512",
	"EdDSA",
}

var (
	mu     sync.Mutex
	loaded = map[string]crypto.Signer{}
)

// Private returns the named embedded private key. It panics if the name is unknown.
func Private(name string) crypto.Signer {
	mu.Lock()
	defer mu.Unlock()
	if k, ok := loaded[name]; ok {
		return k
	}
	b, err := files.ReadFile("testdata/" + name + ".pem")
	if err != nil {
		panic(fmt.Sprintf("testkeys: %v", err))
	}
	blk, _ := pem.Decode(b)
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		panic(fmt.Sprintf("testkeys: %s: %v", name, err))
	}
	s := k.(crypto.Signer)
	loaded[name] = s
	return s
}

// Public returns the public half of the named key.
func Public(name string) crypto.PublicKey { return Private(name).Public() }

// Secret returns the test HMAC secret (65 bytes).
func Secret() []byte {
	b, err := files.ReadFile("testdata/hmac-secret.txt")
	if err != nil {
		panic(err)
	}
	return b
}

// NameForAlg returns the embedded key that signs alg ("" for HS*, which use [Secret]).
func NameForAlg(alg string) string {
	switch {
	case strings.HasPrefix(alg, "HS"):
		return ""
	case strings.HasPrefix(alg, "RS"), strings.HasPrefix(alg, "PS"):
		return RSA2048A
	case alg == "ES256":
		return EC256A
	case alg == "ES384":
		return EC384
	case alg == "ES512":
		return EC521
	case alg == "EdDSA":
		return Ed25519A
	}
	panic("testkeys: unknown alg " + alg)
}

// SigningKey returns what golang-jwt signs alg with: the secret for HS*, else
// the private key of NameForAlg(alg).
func SigningKey(alg string) any {
	if n := NameForAlg(alg); n != "" {
		return Private(n)
	}
	return Secret()
}

// Mint signs claims with key under alg, with the given extra header members
// (kid, typ, crit, …; a nil value deletes a member golang-jwt would set).
// It panics on error: a test that cannot mint a token cannot run.
func Mint(alg string, key any, header map[string]any, claims map[string]any) string {
	m := jwt.GetSigningMethod(alg)
	if m == nil {
		panic("testkeys: no signing method " + alg)
	}
	t := jwt.NewWithClaims(m, jwt.MapClaims(claims))
	for k, v := range header {
		if v == nil {
			delete(t.Header, k)
			continue
		}
		t.Header[k] = v
	}
	s, err := t.SignedString(key)
	if err != nil {
		panic(fmt.Sprintf("testkeys: mint %s: %v", alg, err))
	}
	return s
}

// JWK describes one key of a JWKS built by [JWKS].
type JWK struct {
	// Key is a public key, a private key (its public half is used), or a
	// []byte secret (an oct key).
	Key any
	Kid string
	// Alg, Use and KeyOps are published when set.
	Alg    string
	Use    string
	KeyOps []string
}

// JWKS returns a JWKS document holding keys, as an IdP would publish it.
func JWKS(keys ...JWK) []byte {
	doc := struct {
		Keys []json.RawMessage `json:"keys"`
	}{Keys: []json.RawMessage{}}
	for _, k := range keys {
		doc.Keys = append(doc.Keys, JWKJSON(k))
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

// JWKJSON returns one key as a JWK JSON object.
func JWKJSON(k JWK) json.RawMessage {
	key := k.Key
	switch p := key.(type) {
	case *rsa.PrivateKey:
		key = &p.PublicKey
	case *ecdsa.PrivateKey:
		key = &p.PublicKey
	case ed25519.PrivateKey:
		key = p.Public()
	}
	var ops []jwkset.KEYOPS
	for _, o := range k.KeyOps {
		ops = append(ops, jwkset.KEYOPS(o))
	}
	j, err := jwkset.NewJWKFromKey(key, jwkset.JWKOptions{
		Marshal:  jwkset.JWKMarshalOptions{Private: true},
		Metadata: jwkset.JWKMetadataOptions{KID: k.Kid, ALG: jwkset.ALG(k.Alg), USE: jwkset.USE(k.Use), KEYOPS: ops},
	})
	if err != nil {
		panic(fmt.Sprintf("testkeys: JWK %s: %v", k.Kid, err))
	}
	b, err := json.Marshal(j.Marshal())
	if err != nil {
		panic(err)
	}
	return b
}

// PrivateJWKS returns a JWKS document holding keys with their private
// members (d, p, q, ...) when Key is a private key: a keys file of
// jwksverify's minting (package mint).
func PrivateJWKS(keys ...JWK) []byte {
	doc := struct {
		Keys []json.RawMessage `json:"keys"`
	}{Keys: []json.RawMessage{}}
	for _, k := range keys {
		var ops []jwkset.KEYOPS
		for _, o := range k.KeyOps {
			ops = append(ops, jwkset.KEYOPS(o))
		}
		j, err := jwkset.NewJWKFromKey(k.Key, jwkset.JWKOptions{
			Marshal:  jwkset.JWKMarshalOptions{Private: true},
			Metadata: jwkset.JWKMetadataOptions{KID: k.Kid, ALG: jwkset.ALG(k.Alg), USE: jwkset.USE(k.Use), KEYOPS: ops},
		})
		if err != nil {
			panic(fmt.Sprintf("testkeys: JWK %s: %v", k.Kid, err))
		}
		b, err := json.Marshal(j.Marshal())
		if err != nil {
			panic(err)
		}
		doc.Keys = append(doc.Keys, b)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}
