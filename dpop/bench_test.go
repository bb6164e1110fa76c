package dpop_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// freshStore answers every jti fresh: the benchmarks reuse one proof and
// measure the proof's checks, not a store (package replay benchmarks those).
type freshStore struct{}

func (freshStore) Use(context.Context, [32]byte, time.Duration, time.Time) (bool, error) {
	return true, nil
}

// BenchmarkCheck is the cost of one DPoP proof per request, beside the
// access-token verification it comes with (an ES256 token, token cache
// off): run together, their ratio is the price of DPoP.
func BenchmarkCheck(b *testing.B) {
	for _, tc := range []struct{ alg, key string }{{"ES256", testkeys.EC256A}, {"EdDSA", testkeys.Ed25519A}, {"PS256", testkeys.RSA2048A}} {
		b.Run("proof-"+tc.alg, func(b *testing.B) {
			c := newChecker(b, dpop.Options{Replay: freshStore{}})
			in := input(proof(tc.alg, tc.key, nil, nil), thumb(b, tc.key))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Check(context.Background(), in, t0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("access-token-ES256", func(b *testing.B) {
		k, err := cache.NewKey(testkeys.Public(testkeys.EC256A), cache.KeyMeta{Kid: "ec"})
		if err != nil {
			b.Fatal(err)
		}
		keys := &cache.Keys{}
		keys.Store(cache.NewSet([]*cache.Key{k}, nil, t0, time.Time{}))
		v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: issuer, Keys: keys}}, Now: func() time.Time { return t0 }})
		if err != nil {
			b.Fatal(err)
		}
		tok := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A), map[string]any{"kid": "ec"},
			map[string]any{"iss": issuer, "exp": t0.Add(time.Hour).Unix(), "cnf": map[string]any{"jkt": "x"}})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
		}
	})
}
