package verify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// exampleSigningKey is the identity provider's key in these examples; a
// real verifier only ever holds the public half.
var exampleSigningKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)

// exampleNow is the verifier's clock in these examples (Options.Now).
var exampleNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// exampleVerifier verifies ES256 tokens of https://idp.example.com/ for the
// audience api://orders, with the clock fixed at exampleNow. Its key set is filled
// by hand here; a jwks.Fetcher fills and refreshes it in a service.
func exampleVerifier() (*verify.Verifier, *cache.Keys) {
	key, err := cache.NewKey(&exampleSigningKey.PublicKey, cache.KeyMeta{Kid: "2026-03", Use: "sig"})
	if err != nil {
		panic(err)
	}
	var keys cache.Keys // normally filled and refreshed by a jwks.Fetcher
	keys.Store(cache.NewSet([]*cache.Key{key}, nil, exampleNow, time.Time{}))
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{
			Issuer:        "https://idp.example.com/",
			Keys:          &keys,
			Audiences:     []string{"api://orders"},
			ExtractClaims: []string{"scp"},
		}},
		Now:        func() time.Time { return exampleNow },
		TokenCache: verify.TokenCacheOptions{MaxEntries: 10000},
	})
	if err != nil {
		panic(err)
	}
	return v, &keys
}

// exampleToken is an ES256 token of the example issuer for alice, expiring
// at exp, as the identity provider would sign it (here with golang-jwt).
func exampleToken(exp time.Time) string {
	t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://idp.example.com/", "sub": "alice", "aud": "api://orders",
		"exp": exp.Unix(), "scp": []string{"orders.read", "orders.write"},
	})
	t.Header["kid"] = "2026-03"
	token, err := t.SignedString(exampleSigningKey)
	if err != nil {
		panic(err)
	}
	return token
}

func ExampleVerifier_Verify() {
	v, _ := exampleVerifier()
	res, err := v.Verify(context.Background(), exampleToken(exampleNow.Add(time.Hour)))
	if err != nil {
		fmt.Println("rejected:", verify.Class(err))
		return
	}
	fmt.Println(res.Subject, res.Alg, res.Kid, res.Audience, res.Extracted["scp"])
	// Output: alice ES256 2026-03 [api://orders] orders.read orders.write
}

func ExampleClass() {
	v, _ := exampleVerifier()
	_, err := v.Verify(context.Background(), exampleToken(exampleNow.Add(-time.Hour)))
	fmt.Println(verify.Class(err), errors.Is(err, verify.ErrExpired), errors.Is(err, verify.ErrRejected))
	// Output: expired true true
}

func ExampleVerifier_Explain() {
	v, _ := exampleVerifier()
	steps, _, err := v.Explain(context.Background(), exampleToken(exampleNow.Add(-time.Hour)))
	for _, s := range steps {
		fmt.Println(s.Check, s.OK)
	}
	fmt.Println(verify.Class(err))
	// Output:
	// size true
	// structure true
	// header true
	// crit true
	// issuer true
	// alg true
	// key true
	// signature true
	// kind true
	// exp false
	// expired
}

func ExampleVerifier_CacheStats() {
	v, keys := exampleVerifier()
	tok := exampleToken(exampleNow.Add(time.Hour))
	v.Verify(context.Background(), tok) // miss: verified and cached
	v.Verify(context.Background(), tok) // hit
	keys.Store(cache.NewSet(nil, nil, exampleNow, time.Time{}))
	_, err := v.Verify(context.Background(), tok) // the key left the set: the verdict went with it
	s := v.CacheStats()
	fmt.Println(s.Hits, s.Misses, verify.Class(err))
	// Output: 1 2 unknown_kid
}

// A relying party, after exchanging its authorization code, verifies the
// ID token with the nonce it kept and the access token that came with it.
func ExampleVerifier_VerifyIDToken() {
	key, err := cache.NewKey(&exampleSigningKey.PublicKey, cache.KeyMeta{Kid: "2026-03"})
	if err != nil {
		panic(err)
	}
	var keys cache.Keys // normally filled and refreshed by a jwks.Fetcher
	keys.Store(cache.NewSet([]*cache.Key{key}, nil, exampleNow, time.Time{}))
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{
			Issuer:  "https://idp.example.com/",
			Keys:    &keys,
			IDToken: verify.IDTokenPolicy{ClientIDs: []string{"web-app"}},
		}},
		Now: func() time.Time { return exampleNow },
	})
	if err != nil {
		panic(err)
	}

	// The identity provider's ID token, from the token response.
	const accessToken = "the-access-token-of-the-token-response"
	atHash, _ := verify.HalfHash("ES256", accessToken)
	t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://idp.example.com/", "sub": "alice", "aud": "web-app", "nonce": "n-0S6_WzA2Mj",
		"iat": exampleNow.Unix(), "exp": exampleNow.Add(time.Hour).Unix(), "at_hash": atHash,
	})
	t.Header["kid"] = "2026-03"
	idToken, err := t.SignedString(exampleSigningKey)
	if err != nil {
		panic(err)
	}

	res, err := v.VerifyIDToken(context.Background(), idToken, verify.IDTokenChecks{Nonce: "n-0S6_WzA2Mj", AccessToken: accessToken})
	fmt.Println(res.Subject, err)
	_, err = v.VerifyIDToken(context.Background(), idToken, verify.IDTokenChecks{Nonce: "the-nonce-of-another-login"})
	fmt.Println(verify.Class(err))
	// Output:
	// alice <nil>
	// wrong_nonce
}
