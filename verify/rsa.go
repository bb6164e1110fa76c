package verify

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha512"

	"github.com/jwksverify/jwksverify/verify/internal/rsaverify"
)

// RS256/384/512 and PS256/384/512 verification, with the key prepared once
// (the default) or with crypto/rsa (crypto.go says which runs when).
//
// crypto/rsa converts the *rsa.PublicKey to its internal form on every call,
// rebuilding the modulus's Montgomery constants: about a quarter of an
// RS256-2048 verify and a third of an RS256-3072 one (CPU profile of the
// binary under load: bigmod.rr 29% of the RSA time). verify/internal/rsaverify
// does that once per key, on the key's first use, and verifyRSPrepared
// starts from the exponentiation: the same RFC 8017 checks on the same
// inputs (verify/internal/rsaverify's differential tests and fuzz targets hold it
// to crypto/rsa's verdicts, and the verifier's cross-check re-verifies the
// first accept of each key and a sample of the rest with crypto/rsa).
//
// BenchmarkRSAStep (bench_test.go), go1.26.8 amd64, the 2-core shared
// development machine, -count 6, benchstat -col /impl (medians; the
// golang-jwt column is crypto/rsa behind golang-jwt's signing method):
//
//	              golang-jwt                  verifyRS
//	RS256-2048   30.0µs  1744 B  12 allocs    20.5µs (−32%)  256 B  1 alloc
//	RS256-3072    172µs 44368 B  96 allocs     115µs (−33%)  384 B  1 alloc
//	PS256-2048   36.1µs  1696 B  16 allocs    22.7µs (−37%)  256 B  1 alloc

// rsSpec is what the RS* and PS* verifiers need of an algorithm.
type rsSpec struct {
	hash crypto.Hash
	pss  bool // RSASSA-PSS (PS*), else RSASSA-PKCS1-v1_5 (RS*)
}

// verifyRSPrepared reports whether sig is a valid RS* or PS* signature of
// signing under the prepared key k. PS* require a salt of the hash's length
// (RFC 7518 §3.5; golang-jwt's PS* methods would accept any,
// rsa.PSSSaltLengthAuto: DECISIONS.md).
func verifyRSPrepared(k *rsaverify.PublicKey, rs *rsSpec, signing string, sig []byte) bool {
	var sum [sha512.Size]byte
	digest := oneShotDigest(rs.hash, signing, &sum)
	switch {
	case digest == nil:
		return false
	case rs.pss:
		return k.VerifyPSSSaltHash(rs.hash, digest, sig) == nil
	}
	return k.VerifyPKCS1v15(rs.hash, digest, sig) == nil
}

// verifyRSStandard is verifyRSPrepared with crypto/rsa: the calls
// golang-jwt's SigningMethodRSA and SigningMethodRSAPSS make. A nil key or
// modulus fails.
func verifyRSStandard(rs *rsSpec, pub *rsa.PublicKey, signing string, sig []byte) bool {
	if pub == nil || pub.N == nil {
		return false
	}
	var sum [sha512.Size]byte
	digest := oneShotDigest(rs.hash, signing, &sum)
	switch {
	case digest == nil:
		return false
	case rs.pss:
		return rsa.VerifyPSS(pub, rs.hash, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
	}
	return rsa.VerifyPKCS1v15(pub, rs.hash, digest, sig) == nil
}
