package verify

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/sha512"
	"unsafe"

	"github.com/jwksverify/jwksverify/verify/internal/ecverify"
)

// ES256/384/512 verification, with the key prepared once (the default) or
// with crypto/ecdsa (crypto.go says which runs when). Both replace
// golang-jwt's SigningMethodECDSA.Verify, which turns the raw r||s signature
// into two big.Ints, hashes with a fresh hash.Hash (and a copy of the signing
// string), and calls ecdsa.Verify, which turns the big.Ints back into bytes
// and re-encodes them as ASN.1 with a cryptobyte.Builder before calling
// ecdsa.VerifyASN1. Both hash with the one-shot SHA-2 functions (oneShotDigest):
//
//   - the prepared path verifies with verify/internal/ecverify, which keeps a table
//     of the key's multiples (built on the key's first use) instead of
//     multiplying the key from scratch on every call as crypto/ecdsa does:
//     half the time of an ES256 verify, a third of an ES384 or ES512 one;
//   - verifyES, the standard path, builds the DER signature directly from the
//     raw bytes and calls ecdsa.VerifyASN1: the same primitive on the same
//     inputs as golang-jwt, 13 allocations fewer per token.
//
// BenchmarkECDSAStep (bench_test.go), go1.26.8 amd64, the 2-core shared
// development machine, -count 6, benchstat -col /impl (medians):
//
//	        golang-jwt              verifyES                     verifyESPrepared
//	ES256   74.3µs 1584 B 24 allocs  70.1µs (−6%)  720 B 11 allocs   38.3µs (−48%)  728 B 14 allocs
//	ES384    610µs 2040 B 31 allocs   614µs (~)    952 B 18 allocs    215µs (−65%) 1048 B 16 allocs
//	ES512   3.06ms 2648 B 31 allocs  3.10ms (~)   1368 B 18 allocs    977µs (−68%) 1242 B 16 allocs

// esSpec is what the ES* verifiers need of an algorithm.
type esSpec struct {
	hash crypto.Hash
	size int // bytes of r and of s in the JWS signature (RFC 7518 §3.4)
}

// maxDERSig bounds the DER form of an ES512 signature: a SEQUENCE header with
// a one-byte long-form length (3), and two INTEGERs of 66 bytes each with a
// header (2) and a 0x00 pad (1).
const maxDERSig = 3 + 2*(2+1+66)

// verifyES reports whether sig, the JWS form of an ECDSA signature (r and s,
// big-endian, size bytes each), is a valid signature of signing under pub.
// Wrong lengths, r or s zero, and r or s not below the curve order all fail
// (the last in ecdsa.VerifyASN1, like every other range and point check), and
// so does a nil key.
func verifyES(es *esSpec, pub *ecdsa.PublicKey, signing string, sig []byte) bool {
	if pub == nil || len(sig) != 2*es.size {
		return false
	}
	var derBuf [maxDERSig]byte
	der, ok := appendDERSig(derBuf[:0], sig[:es.size], sig[es.size:])
	if !ok {
		return false
	}
	var sum [sha512.Size]byte
	digest := oneShotDigest(es.hash, signing, &sum)
	return digest != nil && ecdsa.VerifyASN1(pub, digest, der)
}

// verifyESPrepared is verifyES with the prepared key k (verify/internal/ecverify,
// whose differential tests and fuzz targets hold it to crypto/ecdsa's
// verdicts).
func verifyESPrepared(k *ecverify.PublicKey, es *esSpec, signing string, sig []byte) bool {
	if len(sig) != 2*es.size {
		return false
	}
	var sum [sha512.Size]byte
	digest := oneShotDigest(es.hash, signing, &sum)
	return digest != nil && k.Verify(digest, sig[:es.size], sig[es.size:])
}

// oneShotDigest hashes signing with the one-shot SHA-2 function of h into
// sum and returns it, or nil for another hash. Unlike a hash.Hash, the
// one-shot functions keep their state on the stack and allocate nothing.
func oneShotDigest(h crypto.Hash, signing string, sum *[sha512.Size]byte) []byte {
	in := readOnlyBytes(signing)
	switch h {
	case crypto.SHA256:
		s := sha256.Sum256(in)
		return append(sum[:0], s[:]...)
	case crypto.SHA384:
		s := sha512.Sum384(in)
		return append(sum[:0], s[:]...)
	case crypto.SHA512:
		s := sha512.Sum512(in)
		return append(sum[:0], s[:]...)
	}
	return nil
}

// appendDERSig appends to dst the DER encoding of the ECDSA-Sig-Value
// SEQUENCE { r INTEGER, s INTEGER } (RFC 3279 §2.2.3) of the unsigned
// big-endian integers r and s: leading zero bytes trimmed, a 0x00 byte
// prepended when the high bit is set, definite lengths in the shortest form.
// It reports false, appending nothing, when r or s is zero (no valid ECDSA
// signature has one) or the encoding would need a length over 2^32-1.
// It is what crypto/ecdsa's encodeSignature builds with a cryptobyte.Builder,
// without allocating when dst has room.
func appendDERSig(dst, r, s []byte) ([]byte, bool) {
	r, s = trimLeadingZeros(r), trimLeadingZeros(s)
	if len(r) == 0 || len(s) == 0 {
		return dst, false
	}
	rn, sn := intContentLen(r), intContentLen(s)
	body := uint64(derHeaderLen(rn)) + uint64(rn) + uint64(derHeaderLen(sn)) + uint64(sn)
	if body > 0xFFFFFFFF {
		return dst, false
	}
	dst = appendDERHeader(dst, 0x30, int(body)) // SEQUENCE
	dst = appendDERInt(dst, r, rn)
	dst = appendDERInt(dst, s, sn)
	return dst, true
}

func trimLeadingZeros(b []byte) []byte {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return b
}

// intContentLen is the length of the INTEGER contents of the positive,
// trimmed v: one more when the high bit is set (the 0x00 sign pad).
func intContentLen(v []byte) int {
	if v[0]&0x80 != 0 {
		return len(v) + 1
	}
	return len(v)
}

// derHeaderLen is the size of a tag and the definite length n: one length
// byte in the short form (n < 128), else one byte counting the k bytes of n
// that follow it.
func derHeaderLen(n int) int {
	if n <= 0x7F {
		return 2
	}
	k := 0
	for ; n > 0; n >>= 8 {
		k++
	}
	return 2 + k
}

func appendDERHeader(dst []byte, tag byte, n int) []byte {
	dst = append(dst, tag)
	if n <= 0x7F {
		return append(dst, byte(n))
	}
	k := 0
	for m := n; m > 0; m >>= 8 {
		k++
	}
	dst = append(dst, 0x80|byte(k))
	for i := k - 1; i >= 0; i-- {
		dst = append(dst, byte(n>>(8*i)))
	}
	return dst
}

func appendDERInt(dst, v []byte, n int) []byte {
	dst = appendDERHeader(dst, 0x02, n) // INTEGER
	if n > len(v) {
		dst = append(dst, 0)
	}
	return append(dst, v...)
}

// readOnlyBytes returns the bytes of s without copying them, for a function
// that only reads its argument and does not keep it (the one-shot hashes).
// Writing to the result is undefined behaviour: never pass it anywhere else.
func readOnlyBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
