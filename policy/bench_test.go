package policy_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
)

// benchClaims is a typical access token's claims set.
const benchClaims = `{"iss":"https://a.example/","sub":"user-1234","aud":"api://orders","exp":1900000000,"iat":1700000000,` +
	`"jti":"5b1c2c8e-9a7f-4f0e-8d8a-1c2d3e4f5a6b","tid":"t1","scope":"openid profile orders:read orders:write",` +
	`"groups":["dev","ops","admins"],"email":"user@example.com","email_verified":true,"level":3}`

// BenchmarkEvaluate times what a policy adds to a verified (cached)
// token: scopes+claims (target ≤ 0.3 µs, ≤ 2 allocations) and a CEL
// expression of 3 comparisons (target ≤ 2 µs).
func BenchmarkEvaluate(b *testing.B) {
	req := policy.Request{Known: true, Original: request.Original{Method: "POST", Host: "api.example.com", Path: "/orders/1"}}
	for _, bc := range []struct {
		name string
		spec policy.Spec
	}{
		{"scopes+claims", policy.Spec{Scopes: policy.Scopes{All: []string{"orders:write"}},
			Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins", "ops"}}, {Claim: "email_verified", Equals: true}}}},
		{"cel-3-comparisons", policy.Spec{Expression: `claims.tid == "t1" && claims.level >= 3 && request.method != "DELETE"`}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.spec.Name = "p"
			p := one(b, bc.spec)
			res := result(benchClaims)
			if err := p.Evaluate(res, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Evaluate(res, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSelect times choosing a policy among 20 routes.
func BenchmarkSelect(b *testing.B) {
	opts := policy.Options{Policies: []policy.Spec{{Name: "a"}, {Name: "b"}}}
	for _, p := range []string{"/x1/**", "/x2/*/y", "/x3", "/x4/**", "/x5/**", "/x6/**", "/x7/**", "/x8/**", "/x9/**", "/x10/**",
		"/x11/**", "/x12/**", "/x13/**", "/x14/**", "/x15/**", "/x16/**", "/x17/**", "/x18/**", "/x19/**"} {
		opts.Routes = append(opts.Routes, policy.Route{Path: p, Policy: "a"})
	}
	opts.Routes = append(opts.Routes, policy.Route{Methods: []string{"GET"}, Path: "/orders/**", Policy: "b"})
	s := mustSet(b, opts)
	o := request.Original{Method: "GET", Host: "api.example.com", Path: "/orders/1/items"}
	b.ReportAllocs()
	for b.Loop() {
		if s.Select(o).Name() != "b" {
			b.Fatal("wrong policy")
		}
	}
}

// BenchmarkCachedVerifyWithPolicy times a token-cache hit of the real
// verifier alone and followed by a policy, the verifier indexing the
// policy's claims as cmd configures it (Set.ClaimNames): the difference is
// what a policy adds to a cached verify. Targets: scopes+claims adds
// ≤ 0.3 µs and ≤ 2 allocations; a CEL expression of 3 comparisons costs
// ≤ 2 µs.
func BenchmarkCachedVerifyWithPolicy(b *testing.B) {
	key, err := cache.NewKey(testkeys.Public(testkeys.EC256A), cache.KeyMeta{Kid: "ec-a"})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Unix(1800000000, 0)
	keys := &cache.Keys{}
	keys.Store(cache.NewSet([]*cache.Key{key}, nil, now, now.Add(time.Hour)))
	var c map[string]any
	if err := json.Unmarshal([]byte(benchClaims), &c); err != nil {
		b.Fatal(err)
	}
	tok := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A), map[string]any{"kid": "ec-a"}, c)
	ctx := context.Background()
	req := policy.Request{Known: true, Original: request.Original{Method: "POST", Host: "api.example.com", Path: "/orders"}}
	for _, bc := range []struct {
		name string
		spec *policy.Spec // nil: verify only
	}{
		{"verify-only", nil},
		{"verify+policy", &policy.Spec{Name: "p", Scopes: policy.Scopes{All: []string{"orders:write"}},
			Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins", "ops"}}, {Claim: "email_verified", Equals: true}}}},
		{"verify+cel-3-comparisons", &policy.Spec{Name: "p", Expression: `claims.tid == "t1" && claims.level >= 3 && request.method != "DELETE"`}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var p *policy.Policy
			var index []string
			if bc.spec != nil {
				set := mustSet(b, policy.Options{Policies: []policy.Spec{*bc.spec}})
				p, _ = set.Lookup("p")
				index = set.ClaimNames()
			}
			v, err := verify.New(verify.Options{
				Issuers:     []verify.Issuer{{Issuer: issA, Keys: keys, Audiences: []string{"api://orders"}}},
				Now:         func() time.Time { return now },
				TokenCache:  verify.TokenCacheOptions{MaxEntries: 100},
				IndexClaims: index,
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := v.VerifyAt(ctx, tok, now)
				if err != nil {
					b.Fatal(err)
				}
				if p != nil {
					if err := p.Evaluate(res, req); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
