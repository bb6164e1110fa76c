package verify_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// exampleVerifier verifies ES256 tokens of https://idp.example.com/ for the
// audience api://orders, with the clock fixed at t0.
func exampleVerifier() (*verify.Verifier, *cache.Keys) {
	key, err := cache.NewKey(testkeys.Public(testkeys.EC256A), cache.KeyMeta{Kid: "2026-03", Use: "sig"})
	if err != nil {
		panic(err)
	}
	var keys cache.Keys // normally filled and refreshed by a jwks.Fetcher
	keys.Store(cache.NewSet([]*cache.Key{key}, nil, t0, time.Time{}))
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{
			Issuer:        "https://idp.example.com/",
			Keys:          &keys,
			Audiences:     []string{"api://orders"},
			ExtractClaims: []string{"scp"},
		}},
		Now:        func() time.Time { return t0 },
		TokenCache: verify.TokenCacheOptions{MaxEntries: 10000},
	})
	if err != nil {
		panic(err)
	}
	return v, &keys
}

func exampleToken(exp time.Time) string {
	return testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A), map[string]any{"kid": "2026-03"}, map[string]any{
		"iss": "https://idp.example.com/", "sub": "alice", "aud": "api://orders",
		"exp": exp.Unix(), "scp": []string{"orders.read", "orders.write"},
	})
}

func ExampleVerifier_Verify() {
	v, _ := exampleVerifier()
	res, err := v.Verify(context.Background(), exampleToken(t0.Add(time.Hour)))
	if err != nil {
		fmt.Println("rejected:", verify.Class(err))
		return
	}
	fmt.Println(res.Subject, res.Alg, res.Kid, res.Audience, res.Extracted["scp"])
	// Output: alice ES256 2026-03 [api://orders] orders.read orders.write
}

func ExampleClass() {
	v, _ := exampleVerifier()
	_, err := v.Verify(context.Background(), exampleToken(t0.Add(-time.Hour)))
	fmt.Println(verify.Class(err), errors.Is(err, verify.ErrExpired), errors.Is(err, verify.ErrRejected))
	// Output: expired true true
}

func ExampleVerifier_Explain() {
	v, _ := exampleVerifier()
	steps, _, err := v.Explain(context.Background(), exampleToken(t0.Add(-time.Hour)))
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
	// exp false
	// expired
}

func ExampleVerifier_CacheStats() {
	v, keys := exampleVerifier()
	tok := exampleToken(t0.Add(time.Hour))
	v.Verify(context.Background(), tok) // miss: verified and cached
	v.Verify(context.Background(), tok) // hit
	keys.Store(cache.NewSet(nil, nil, t0, time.Time{}))
	_, err := v.Verify(context.Background(), tok) // the key left the set: the verdict went with it
	s := v.CacheStats()
	fmt.Println(s.Hits, s.Misses, verify.Class(err))
	// Output: 1 2 unknown_kid
}
