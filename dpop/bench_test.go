package dpop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"math/big"
	"strings"
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

// BenchmarkCheck is the cost of one DPoP proof per request (a returning
// client: its key comes from the checker's key cache), beside the floors of
// its signature and the access-token verification it comes with (an ES256
// token, token cache off): run together, proof-ES256 over floor-ecdsa-P256
// and proof-EdDSA over floor-ed25519 are what jwksverify adds to the
// standard library's verification, and proof over access-token the price
// of DPoP.
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
	// A first visit: the key parsed and validated for the proof (the cache
	// off), what every proof cost before the key cache.
	b.Run("proof-ES256-new-key", func(b *testing.B) {
		c := newChecker(b, dpop.Options{Replay: freshStore{}, KeyCacheSize: -1})
		in := input(proof("ES256", testkeys.EC256A, nil, nil), thumb(b, testkeys.EC256A))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Check(context.Background(), in, t0); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The floors: the signature of the same proofs, hash included, by the
	// standard library on a key and a signature decoded before the loop
	// (for ECDSA the DER form, as verify.BenchmarkFloor does).
	b.Run("floor-ecdsa-P256", func(b *testing.B) {
		p := proof("ES256", testkeys.EC256A, nil, nil)
		dot := strings.LastIndexByte(p, '.')
		raw, err := base64.RawURLEncoding.DecodeString(p[dot+1:])
		if err != nil {
			b.Fatal(err)
		}
		der, err := asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(raw[:32]), new(big.Int).SetBytes(raw[32:])})
		if err != nil {
			b.Fatal(err)
		}
		pub := testkeys.Public(testkeys.EC256A).(*ecdsa.PublicKey)
		msg := []byte(p[:dot])
		b.ReportAllocs()
		for b.Loop() {
			sum := sha256.Sum256(msg)
			if !ecdsa.VerifyASN1(pub, sum[:], der) {
				b.Fatal("floor: signature does not verify")
			}
		}
	})
	b.Run("floor-ed25519", func(b *testing.B) {
		p := proof("EdDSA", testkeys.Ed25519A, nil, nil)
		dot := strings.LastIndexByte(p, '.')
		sig, err := base64.RawURLEncoding.DecodeString(p[dot+1:])
		if err != nil {
			b.Fatal(err)
		}
		pub := testkeys.Public(testkeys.Ed25519A).(ed25519.PublicKey)
		msg := []byte(p[:dot])
		b.ReportAllocs()
		for b.Loop() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Fatal("floor: signature does not verify")
			}
		}
	})
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
