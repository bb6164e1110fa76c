package cache_test

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// rocaPrime returns a prime of bits bits with RSALib's structure: k·M +
// (65537^a mod M), M the product of the primes 3 to 167 (what the
// fingerprint tests; RSALib's M is a longer primorial, which has the same
// residues modulo these primes).
func rocaPrime(t *testing.T, rng *mrand.Rand, bits int) *big.Int {
	t.Helper()
	m := big.NewInt(1)
	for _, r := range []int64{3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73,
		79, 83, 89, 97, 101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157, 163, 167} {
		m.Mul(m, big.NewInt(r))
	}
	kbits := bits - m.BitLen()
	for range 100000 {
		a := new(big.Int).SetUint64(rng.Uint64())
		g := new(big.Int).Exp(big.NewInt(65537), a, m)
		k := new(big.Int)
		for i := 0; i < kbits; i += 64 {
			k.Lsh(k, 64).Or(k, new(big.Int).SetUint64(rng.Uint64()))
		}
		k.SetBit(k, kbits-1, 1)
		k.Rsh(k, uint(k.BitLen()-kbits))
		p := k.Mul(k, m).Add(k, g)
		if p.BitLen() == bits && p.ProbablyPrime(20) {
			return p
		}
	}
	t.Fatal("no RSALib-structured prime found")
	return nil
}

func TestROCAFingerprint(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(1, 2))
	// 1025 and 1024 bits: a modulus of at least cache.MinRSABits (two
	// 1024-bit primes of this structure make 2047), or NewKey refuses it
	// for its size before it looks at the fingerprint, and its ROCA check
	// goes untested.
	n := new(big.Int).Mul(rocaPrime(t, rng, 1025), rocaPrime(t, rng, 1024))
	if n.BitLen() < cache.MinRSABits {
		t.Fatalf("the RSALib-structured modulus has %d bits, want at least %d", n.BitLen(), cache.MinRSABits)
	}
	t.Run("rsalib-modulus", func(t *testing.T) {
		if !cache.HasROCAFingerprint(n) {
			t.Fatalf("HasROCAFingerprint(RSALib-structured modulus) = false, want true")
		}
		_, err := cache.NewKey(&rsa.PublicKey{N: n, E: 65537}, cache.KeyMeta{Kid: "roca"})
		if !errors.Is(err, cache.ErrWeakKey) || !strings.Contains(err.Error(), "ROCA") {
			t.Fatalf("NewKey(ROCA key of %d bits) = %v, want ErrWeakKey for the ROCA fingerprint", n.BitLen(), err)
		}
	})
	t.Run("generated-keys", func(t *testing.T) {
		for _, name := range []string{testkeys.RSA2048A, testkeys.RSA2048B} {
			pub := testkeys.Public(name).(*rsa.PublicKey)
			if cache.HasROCAFingerprint(pub.N) {
				t.Errorf("HasROCAFingerprint(%s) = true, want false", name)
			}
			if _, err := cache.NewKey(pub, cache.KeyMeta{Kid: name}); err != nil {
				t.Errorf("NewKey(%s) = %v", name, err)
			}
		}
	})
	t.Run("random-moduli", func(t *testing.T) {
		for range 200 {
			r, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 2048))
			if err != nil {
				t.Fatal(err)
			}
			if cache.HasROCAFingerprint(r.SetBit(r, 0, 1)) {
				t.Fatalf("HasROCAFingerprint(random %x…) = true", r.Bytes()[:8])
			}
		}
	})
	t.Run("one-residue-off", func(t *testing.T) {
		// 65537 ≡ 2 (mod 3) generates {1, 2}: a modulus divisible by 3 is
		// off the fingerprint however its other residues fall.
		off := new(big.Int).Sub(n, new(big.Int).Mod(n, big.NewInt(3)))
		if cache.HasROCAFingerprint(off) {
			t.Fatalf("HasROCAFingerprint(a multiple of 3) = true")
		}
	})
	for _, n := range []*big.Int{nil, big.NewInt(0), big.NewInt(-5)} {
		if cache.HasROCAFingerprint(n) {
			t.Errorf("HasROCAFingerprint(%v) = true", n)
		}
	}
}
