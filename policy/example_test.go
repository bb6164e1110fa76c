package policy_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/policy/celexpr"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// A policy set chooses a policy per route and evaluates it on a verified
// token: scopes, claim matches and a CEL expression over the token and the
// original request. A denial is class forbidden (403), apart from the
// token's own rejections (401).
func ExampleSet() {
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{
			{Name: "orders-read", Scopes: policy.Scopes{All: []string{"orders.read"}}},
			{Name: "orders-admin", Claims: []policy.Claim{{Claim: "role", Equals: "admin"}},
				Expression: `request.method in ["GET", "DELETE"]`},
		},
		Routes: []policy.Route{
			{Methods: []string{"DELETE"}, Path: "/orders/**", Policy: "orders-admin"},
			{Path: "/orders/**", Policy: "orders-read"},
		},
		Compiler: &celexpr.Compiler{}, // for Expression
	})
	if err != nil {
		panic(err)
	}

	// A verified token of alice with scope orders.read and no role.
	signing, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	key, _ := cache.NewKey(&signing.PublicKey, cache.KeyMeta{Kid: "k1"})
	var keys cache.Keys // a jwks.Fetcher's in a service
	keys.Store(cache.NewSet([]*cache.Key{key}, nil, time.Now(), time.Time{}))
	v, err := verify.New(verify.Options{
		Issuers:     []verify.Issuer{{Issuer: "https://idp.example.com/", Keys: &keys}},
		IndexClaims: set.ClaimNames(), // the claims the policies read, indexed once
	})
	if err != nil {
		panic(err)
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://idp.example.com/", "sub": "alice", "scope": "orders.read",
		"exp": time.Now().Add(time.Hour).Unix()})
	t.Header["kid"] = "k1"
	token, _ := t.SignedString(signing)
	res, err := v.Verify(context.Background(), token)
	if err != nil {
		panic(err)
	}

	for _, method := range []string{"GET", "DELETE"} {
		o, err := request.FromParts(method, "https", "api.example.com", "/orders/42")
		choice, err := set.Choose("", o, err)
		if err != nil {
			panic(err)
		}
		outcome := "allowed"
		if err := choice.Policy.Evaluate(res, policy.Request{Original: o, Known: true}); err != nil {
			outcome = verify.Class(err) // forbidden: errors.Is(err, verify.ErrDenied)
		}
		fmt.Println(method, choice.Policy.Name(), outcome)
	}
	// Output:
	// GET orders-read allowed
	// DELETE orders-admin forbidden
}
