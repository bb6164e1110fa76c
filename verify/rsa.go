package verify

import (
	"crypto"
	"crypto/sha512"

	"github.com/jwksverify/jwksverify/internal/rsaverify"
)

// RS256/384/512 and PS256/384/512 verification with a prepared key: the
// second step in which the verifier does not use golang-jwt's signing method.
//
// golang-jwt's SigningMethodRSA and SigningMethodRSAPSS hash with a fresh
// hash.Hash and call crypto/rsa, which converts the *rsa.PublicKey to its
// internal form on every call — rebuilding the modulus's Montgomery
// constants, about a quarter of an RS256-2048 verify and a third of an
// RS256-3072 one (CPU profile of the binary under load: bigmod.rr 29% of
// the RSA time). cache.NewKey prepares each RSA key once
// (internal/rsaverify), and verifyRS hashes with the one-shot SHA-2
// functions and verifies with that key: the same RFC 8017 checks on the same
// inputs (internal/rsaverify's differential tests and fuzz target hold it to
// crypto/rsa's verdicts).
//
// BenchmarkRSAStep (bench_test.go), go1.26.8 amd64, the 2-core shared
// development machine, -count 6, benchstat -col /impl (medians):
//
//	              golang-jwt                  verifyRS
//	RS256-2048   30.0µs  1744 B  12 allocs    20.5µs (−32%)  256 B  1 alloc
//	RS256-3072    172µs 44368 B  96 allocs     115µs (−33%)  384 B  1 alloc
//	PS256-2048   36.1µs  1696 B  16 allocs    22.7µs (−37%)  256 B  1 alloc
//
// Keys without a prepared form (built as struct literals, or in FIPS 140-3
// mode and BoringCrypto builds, see rsaverify.Enabled) go through
// golang-jwt as before.

// rsSpec is what verifyRS needs of an RS* or PS* algorithm.
type rsSpec struct {
	hash crypto.Hash
	pss  bool // RSASSA-PSS (PS*), else RSASSA-PKCS1-v1_5 (RS*)
}

// verifyRS reports whether sig is a valid RS* or PS* signature of signing
// under k. PS* accept any salt length, as golang-jwt's PS* methods do
// (rsa.PSSSaltLengthAuto).
func verifyRS(rs *rsSpec, signing string, sig []byte, k *rsaverify.PublicKey) bool {
	var sum [sha512.Size]byte
	digest := oneShotDigest(rs.hash, signing, &sum)
	if digest == nil {
		return false
	}
	if rs.pss {
		return k.VerifyPSS(rs.hash, digest, sig) == nil
	}
	return k.VerifyPKCS1v15(rs.hash, digest, sig) == nil
}
