package verify_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rsa"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// benchVerifier verifies issA's tokens (audience aud, every algorithm) with
// a 3-key set: the key of alg under kidFor(alg), and two others.
func benchVerifier(b *testing.B, alg string, tc verify.TokenCacheOptions) *verify.Verifier {
	b.Helper()
	other := "ES256"
	if alg == "ES256" {
		other = "EdDSA"
	}
	keys := keysOf(keyFor(b, other, "other-1"), keyFor(b, alg, kidFor(alg)), keyFor(b, "RS256", "other-2"))
	return newVerifier(b, verify.Options{Issuers: []verify.Issuer{issuerA(keys)}, TokenCache: tc})
}

// BenchmarkVerify is an uncached verify: signature, exp, aud and iss, the key
// found by kid in a 3-key set.
func BenchmarkVerify(b *testing.B) {
	for _, alg := range testkeys.Algorithms {
		b.Run(alg, func(b *testing.B) {
			v := benchVerifier(b, alg, verify.TokenCacheOptions{})
			tok := mint(alg, kidFor(alg), nil)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifyCached is a verified-token cache hit.
func BenchmarkVerifyCached(b *testing.B) {
	for _, alg := range testkeys.Algorithms {
		b.Run(alg, func(b *testing.B) {
			v := benchVerifier(b, alg, verify.TokenCacheOptions{MaxEntries: 1000})
			tok := mint(alg, kidFor(alg), nil)
			ctx := context.Background()
			if _, err := v.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFloor is the bare signature primitive on pre-parsed inputs: hash
// and verify, nothing else. It is what BenchmarkVerify is compared against.
func BenchmarkFloor(b *testing.B) {
	for _, alg := range testkeys.Algorithms {
		b.Run(alg, func(b *testing.B) {
			tok := mint(alg, kidFor(alg), nil)
			dot := strings.LastIndexByte(tok, '.')
			msg := []byte(tok[:dot])
			sig := segment(b, tok, 2)
			var hash crypto.Hash
			switch alg[2:] {
			case "256":
				hash = crypto.SHA256
			case "384":
				hash = crypto.SHA384
			case "512":
				hash = crypto.SHA512
			}
			var verifyOnce func() bool
			switch pub := keyFor(b, alg, "").Public.(type) {
			case []byte:
				verifyOnce = func() bool {
					m := hmac.New(hash.New, pub)
					m.Write(msg)
					return hmac.Equal(m.Sum(nil), sig)
				}
			case *rsa.PublicKey:
				pss := strings.HasPrefix(alg, "PS")
				opts := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}
				verifyOnce = func() bool {
					h := hash.New()
					h.Write(msg)
					if pss {
						return rsa.VerifyPSS(pub, hash, h.Sum(nil), sig, opts) == nil
					}
					return rsa.VerifyPKCS1v15(pub, hash, h.Sum(nil), sig) == nil
				}
			case *ecdsa.PublicKey:
				n := len(sig) / 2
				r, s := new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:])
				verifyOnce = func() bool {
					h := hash.New()
					h.Write(msg)
					return ecdsa.Verify(pub, h.Sum(nil), r, s)
				}
			case ed25519.PublicKey:
				verifyOnce = func() bool { return ed25519.Verify(pub, msg, sig) }
			}
			b.ReportAllocs()
			for b.Loop() {
				if !verifyOnce() {
					b.Fatal("signature does not verify")
				}
			}
		})
	}
}

// BenchmarkBaseline is the naive way: golang-jwt's jwt.Parse with a keyfunc
// built once from the JWKS, checking the same claims.
func BenchmarkBaseline(b *testing.B) {
	for _, alg := range testkeys.Algorithms {
		b.Run(alg, func(b *testing.B) {
			var key any = testkeys.Secret()
			if n := testkeys.NameForAlg(alg); n != "" {
				key = testkeys.Public(n)
			}
			kf, err := keyfunc.NewJWKSetJSON(testkeys.JWKS(testkeys.JWK{Key: key, Kid: kidFor(alg), Alg: alg}))
			if err != nil {
				b.Fatal(err)
			}
			tok := mint(alg, kidFor(alg), nil)
			p := jwt.NewParser(jwt.WithAudience(aud), jwt.WithIssuer(issA), jwt.WithExpirationRequired(),
				jwt.WithLeeway(30*time.Second), jwt.WithTimeFunc(func() time.Time { return t0 }), jwt.WithValidMethods([]string{alg}))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Parse(tok, kf.Keyfunc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCachedLookup is a cache hit for a token whose issuer has many
// keys, or among many issuers: it must stay flat.
func BenchmarkCachedLookup(b *testing.B) {
	ec := testkeys.Public(testkeys.EC256A)
	manyKeys := func(n int) *cache.Keys {
		keys := make([]*cache.Key, n)
		for i := range keys {
			keys[i] = newKey(b, ec, cache.KeyMeta{Kid: fmt.Sprint("k-", i)})
		}
		return keysOf(keys...)
	}
	run := func(b *testing.B, issuers []verify.Issuer, iss, kid string) {
		v := newVerifier(b, verify.Options{Issuers: issuers, TokenCache: verify.TokenCacheOptions{MaxEntries: 100000}})
		tok := mint("ES256", kid, map[string]any{"iss": iss})
		ctx := context.Background()
		if _, err := v.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
		// Other cached tokens beside it, as in a busy service.
		for i := range 1000 {
			if _, err := v.Verify(ctx, mint("ES256", kid, map[string]any{"iss": iss, "jti": fmt.Sprint(i)})); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprint("keys=", n), func(b *testing.B) {
			run(b, []verify.Issuer{{Issuer: issA, Keys: manyKeys(n), Audiences: []string{aud}}}, issA, fmt.Sprint("k-", n/2))
		})
	}
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprint("issuers=", n), func(b *testing.B) {
			keys := manyKeys(1)
			var issuers []verify.Issuer
			for i := range n {
				issuers = append(issuers, verify.Issuer{Issuer: fmt.Sprintf("https://idp-%d.example.com/", i), Keys: keys, Audiences: []string{aud}})
			}
			run(b, issuers, issuers[n/2].Issuer, "k-0")
		})
	}
}
