package verify_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha512"
	"encoding/asn1"
	"fmt"
	"hash"
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

// benchCase is one sub-benchmark: alg signed with the embedded key keyName
// ("" for HS*, which use the test secret).
type benchCase struct{ name, alg, keyName string }

// benchCases lists every algorithm with its default test key, and RS256 with
// a 3072-bit key.
func benchCases() []benchCase {
	var cs []benchCase
	for _, alg := range testkeys.Algorithms {
		cs = append(cs, benchCase{alg, alg, testkeys.NameForAlg(alg)})
	}
	return append(cs, benchCase{"RS256-3072", "RS256", testkeys.RSA3072})
}

// key is the case's verification key with kid.
func (c benchCase) key(b *testing.B, kid string) *cache.Key {
	if c.keyName == "" {
		return keyFor(b, c.alg, kid)
	}
	return newKey(b, testkeys.Public(c.keyName), cache.KeyMeta{Kid: kid})
}

// token mints the case's token for issA under kidFor(alg).
func (c benchCase) token() string {
	if c.keyName == "" {
		return mint(c.alg, kidFor(c.alg), nil)
	}
	return testkeys.Mint(c.alg, testkeys.Private(c.keyName), map[string]any{"kid": kidFor(c.alg)}, claims(nil))
}

// benchVerifier verifies issA's tokens (audience aud, every algorithm) with
// a 3-key set: the case's key under kidFor(alg), and two others.
func benchVerifier(b *testing.B, c benchCase, tc verify.TokenCacheOptions) *verify.Verifier {
	return benchVerifierWith(b, c, verify.Options{TokenCache: tc})
}

// benchVerifierWith is benchVerifier with other options.
func benchVerifierWith(b *testing.B, c benchCase, opts verify.Options) *verify.Verifier {
	b.Helper()
	other := "ES256"
	if c.alg == "ES256" {
		other = "EdDSA"
	}
	keys := keysOf(keyFor(b, other, "other-1"), c.key(b, kidFor(c.alg)), keyFor(b, "RS256", "other-2"))
	opts.Issuers = []verify.Issuer{issuerA(keys)}
	return newVerifier(b, opts)
}

// loopVerify times v.Verify of tok. The first verification is not timed: it
// builds an EC key's table of multiples once (verify/internal/ecverify's
// BenchmarkFirstUse measures that) and, with a token cache, stores the
// verdict the loop then hits.
func loopVerify(b *testing.B, v *verify.Verifier, tok string) {
	b.Helper()
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
}

// BenchmarkVerify is an uncached verify: signature, exp, aud and iss, the key
// found by kid in a 3-key set.
func BenchmarkVerify(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			v := benchVerifier(b, c, verify.TokenCacheOptions{})
			loopVerify(b, v, c.token())
		})
	}
}

// BenchmarkVerifyStandardCrypto is BenchmarkVerify for RS*, PS* and ES*
// with Options.StandardCrypto: what an operator's switch to crypto/rsa and
// crypto/ecdsa costs.
func BenchmarkVerifyStandardCrypto(b *testing.B) {
	for _, c := range benchCases() {
		if c.alg[:2] != "RS" && c.alg[:2] != "PS" && c.alg[:2] != "ES" {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			loopVerify(b, benchVerifierWith(b, c, verify.Options{StandardCrypto: true}), c.token())
		})
	}
}

// BenchmarkVerifyCached is a verified-token cache hit.
func BenchmarkVerifyCached(b *testing.B) {
	b.Run("ES256-shared", func(b *testing.B) {
		// The cache as a reloading process (cmd) shares it across
		// verifiers: a hit also checks that its issuer is the verifier's.
		// Compare with ES256 (the same token on the verifier's own cache).
		var c benchCase
		for _, bc := range benchCases() {
			if bc.name == "ES256" {
				c = bc
			}
		}
		tc, err := verify.NewTokenCache(verify.TokenCacheOptions{MaxEntries: 1000})
		if err != nil {
			b.Fatal(err)
		}
		loopVerify(b, benchVerifierWith(b, c, verify.Options{Cache: tc}), c.token())
	})
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			loopVerify(b, benchVerifier(b, c, verify.TokenCacheOptions{MaxEntries: 1000}), c.token())
		})
	}
}

// BenchmarkFloor is the bare signature primitive on pre-parsed inputs: hash
// and verify, nothing else. It is what BenchmarkVerify is compared against.
// The hash state and the digest buffer are reused, so hashing allocates
// nothing. For ECDSA the primitive is ecdsa.VerifyASN1 on a DER signature
// built once before the loop: ecdsa.Verify(r, s) would re-encode r and s to
// DER on every call, which is work a verifier can avoid (verifyES does), so
// counting it would inflate the floor.
func BenchmarkFloor(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			tok := c.token()
			dot := strings.LastIndexByte(tok, '.')
			msg := []byte(tok[:dot])
			sig := segment(b, tok, 2)
			var hf crypto.Hash
			switch c.alg[2:] {
			case "256":
				hf = crypto.SHA256
			case "384":
				hf = crypto.SHA384
			case "512":
				hf = crypto.SHA512
			}
			var h hash.Hash
			if hf != 0 {
				h = hf.New()
			}
			buf := make([]byte, 0, sha512.Size)
			digest := func() []byte {
				h.Reset()
				h.Write(msg)
				return h.Sum(buf[:0])
			}
			var verifyOnce func() bool
			switch pub := c.key(b, "").Public.(type) {
			case []byte:
				m := hmac.New(hf.New, pub)
				verifyOnce = func() bool {
					m.Reset()
					m.Write(msg)
					return hmac.Equal(m.Sum(buf[:0]), sig)
				}
			case *rsa.PublicKey:
				pss := strings.HasPrefix(c.alg, "PS")
				opts := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}
				verifyOnce = func() bool {
					if pss {
						return rsa.VerifyPSS(pub, hf, digest(), sig, opts) == nil
					}
					return rsa.VerifyPKCS1v15(pub, hf, digest(), sig) == nil
				}
			case *ecdsa.PublicKey:
				n := len(sig) / 2
				der, err := asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:])})
				if err != nil {
					b.Fatal(err)
				}
				verifyOnce = func() bool { return ecdsa.VerifyASN1(pub, digest(), der) }
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

// BenchmarkECDSAStep compares the signature step of ES* tokens: golang-jwt's
// SigningMethodECDSA.Verify against the verifier's step with StandardCrypto
// (verifyES: crypto/ecdsa) and without (verifyESPrepared: verify/internal/ecverify,
// cross-checked at the default rate), which replace it (ecdsa.go).
func BenchmarkECDSAStep(b *testing.B) {
	for _, alg := range []string{"ES256", "ES384", "ES512"} {
		tok := mint(alg, kidFor(alg), nil)
		dot := strings.LastIndexByte(tok, '.')
		signing, sig := tok[:dot], segment(b, tok, 2)
		key := keyFor(b, alg, "")
		prepared, standard := verify.NewSignatureStep(false), verify.NewSignatureStep(true)
		if !prepared.Verify(alg, signing, sig, key) { // builds the table, untimed
			b.Fatal("signature does not verify")
		}
		b.Run("alg="+alg+"/impl=golang-jwt", func(b *testing.B) {
			m := jwt.GetSigningMethod(alg)
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Verify(signing, sig, key.Public); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("alg="+alg+"/impl=verifyES", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !standard.Verify(alg, signing, sig, key) {
					b.Fatal("signature does not verify")
				}
			}
		})
		b.Run("alg="+alg+"/impl=verifyESPrepared", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !prepared.Verify(alg, signing, sig, key) {
					b.Fatal("signature does not verify")
				}
			}
		})
	}
}

// BenchmarkRSAStep compares the signature step of RS* and PS* tokens:
// golang-jwt's signing method (crypto/rsa, which prepares the key on every
// call) against the verifier's step with the key prepared once
// (verifyRSPrepared, cross-checked at the default rate; rsa.go).
func BenchmarkRSAStep(b *testing.B) {
	for _, c := range []benchCase{{"RS256-2048", "RS256", testkeys.RSA2048A}, {"RS256-3072", "RS256", testkeys.RSA3072}, {"PS256-2048", "PS256", testkeys.RSA2048A}} {
		tok := c.token()
		dot := strings.LastIndexByte(tok, '.')
		signing, sig := tok[:dot], segment(b, tok, 2)
		key := c.key(b, "")
		step := verify.NewSignatureStep(false)
		if !step.Verify(c.alg, signing, sig, key) { // prepares the key, untimed
			b.Fatal("signature does not verify")
		}
		b.Run("alg="+c.name+"/impl=golang-jwt", func(b *testing.B) {
			m := jwt.GetSigningMethod(c.alg)
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Verify(signing, sig, key.Public); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("alg="+c.name+"/impl=verifyRS", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !step.Verify(c.alg, signing, sig, key) {
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
