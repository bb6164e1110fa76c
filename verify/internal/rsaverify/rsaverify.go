// Package rsaverify verifies RSASSA-PKCS1-v1_5 and RSASSA-PSS signatures
// (RFC 8017 §8.2.2 and §8.1.2) with a public key prepared once.
//
// crypto/rsa turns the *rsa.PublicKey into its internal form on every call:
// it rebuilds the modulus's Montgomery constants (R² mod N by repeated
// doubling and squaring; bigmod.rr is 29% of the RSA time in a CPU profile
// of the server under load), which with the conversions around it is a
// third of a verify and 8 to 100 allocations (measured below). A JWT verifier
// checks many signatures with few keys, so [NewPublicKey] does that work once
// per key (package verify calls it on the key's first use and keeps the
// result with the key), and [PublicKey.VerifyPKCS1v15] and
// [PublicKey.VerifyPSS] start from the exponentiation. The arithmetic is Go's
// own (verify/internal/bigmod is a copy of crypto/internal/fips140/bigmod) and the
// encoding checks follow crypto/internal/fips140/rsa step by step; only the
// caching differs. Verification handles public data only, so nothing here
// needs to run in constant time.
//
// BenchmarkVerify (rsaverify_test.go), go1.26.8 linux/amd64, the 2-core
// shared development machine (load average 2.7), -count 6, benchstat
// -col /impl (medians):
//
//	             crypto/rsa                  rsaverify
//	RS256-2048    44.5µs  1376 B   9 allocs    27.5µs (−38%)  256 B  1 alloc
//	RS256-3072     171µs 44000 B  93 allocs     111µs (−35%)  384 B  1 alloc
//	RS256-4096     316µs 62560 B 101 allocs     221µs (−30%)  512 B  1 alloc
//	PS256-2048    31.5µs  1328 B  13 allocs    20.8µs (−34%)  256 B  1 alloc
//
// The differential tests (every key size and hash, valid signatures and
// their mutations), TestCraftedEncodings (encoded messages that break one
// rule of PKCS #1 v1.5 or PSS each), FuzzVerify (arbitrary signatures) and
// FuzzVerifyEncoded (well-formed encodings of fuzzed messages, hashes and
// salts, mutated before and after the PSS mask or in the signature, under
// 2048-, 2049-, 3072- and 4096-bit keys and exponents 3, 65537 and 2³¹−1)
// check that both packages accept and refuse exactly the same signatures.
//
// Use crypto/rsa instead when the FIPS 140-3 module must do the work
// (GODEBUG=fips140=on) or when BoringCrypto is linked in, which is faster
// still: [Enabled] reports false then.
package rsaverify

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"

	"github.com/jwksverify/jwksverify/verify/internal/bigmod"
)

// maxExponent is the largest public exponent crypto/rsa accepts (2³¹−1), so
// that both packages verify with the same keys.
const maxExponent = 1<<31 - 1

// PublicKey is an RSA public key prepared for repeated verification.
// It is immutable and safe for concurrent use.
type PublicKey struct {
	n    *bigmod.Modulus
	e    uint
	size int // bytes of the modulus
	bits int // bits of the modulus
}

// NewPublicKey prepares pub for verification. It refuses what crypto/rsa
// refuses to verify with: a missing, even or sub-1024-bit modulus, and an
// exponent that is even, below 3 or above 2³¹−1.
func NewPublicKey(pub *rsa.PublicKey) (*PublicKey, error) {
	if pub == nil || pub.N == nil {
		return nil, errors.New("rsaverify: missing public modulus")
	}
	if pub.N.Sign() <= 0 || pub.N.Bit(0) == 0 {
		return nil, errors.New("rsaverify: public modulus is not odd and positive")
	}
	if bits := pub.N.BitLen(); bits < 1024 {
		return nil, fmt.Errorf("rsaverify: %d-bit keys are insecure", bits)
	}
	if pub.E < 3 || pub.E&1 == 0 || pub.E > maxExponent {
		return nil, fmt.Errorf("rsaverify: unsupported public exponent %d", pub.E)
	}
	n, err := bigmod.NewModulus(pub.N.Bytes())
	if err != nil {
		return nil, fmt.Errorf("rsaverify: %w", err)
	}
	return &PublicKey{n: n, e: uint(pub.E), size: n.Size(), bits: n.BitLen()}, nil
}

// Size returns the modulus size in bytes, which is the length of a signature.
func (k *PublicKey) Size() int { return k.size }

// encrypt returns sig^e mod N, big-endian, Size bytes long. It fails when sig
// is not Size bytes long or not below N (RFC 8017 §5.2.2 step 1).
func (k *PublicKey) encrypt(sig []byte) ([]byte, error) {
	if len(sig) != k.size {
		return nil, ErrVerification
	}
	s, err := bigmod.NewNat().SetBytes(sig, k.n)
	if err != nil {
		return nil, ErrVerification
	}
	return bigmod.NewNat().ExpShortVarTime(s, k.e, k.n).Bytes(k.n), nil
}

// digestInfoPrefix is the DER DigestInfo header of each hash that JWS uses
// (RFC 8017 §9.2, Note 1).
func digestInfoPrefix(h crypto.Hash) []byte {
	switch h {
	case crypto.SHA256:
		return []byte{0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20}
	case crypto.SHA384:
		return []byte{0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30}
	case crypto.SHA512:
		return []byte{0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40}
	}
	return nil
}

// VerifyPKCS1v15 verifies an RSASSA-PKCS1-v1_5 signature (RFC 8017 §8.2.2)
// of hashed, the digest of the message under hash (SHA-256, SHA-384 or
// SHA-512). It returns nil or [ErrVerification]; hashed and sig are not
// modified or retained.
func (k *PublicKey) VerifyPKCS1v15(hash crypto.Hash, hashed, sig []byte) error {
	prefix := digestInfoPrefix(hash)
	if prefix == nil || len(hashed) != hash.Size() {
		return ErrVerification
	}
	// EM = 0x00 || 0x01 || PS || 0x00 || T, with at least 8 bytes of PS.
	if k.size < len(prefix)+len(hashed)+2+8+1 {
		return ErrVerification
	}
	em, err := k.encrypt(sig)
	if err != nil {
		return err
	}
	var buf [512]byte // the expected EM of keys up to 4096 bits
	var want []byte
	if k.size <= len(buf) {
		want = buf[:k.size]
	} else {
		want = make([]byte, k.size)
	}
	want[0], want[1] = 0, 1
	ps := want[2 : k.size-len(prefix)-len(hashed)-1]
	for i := range ps {
		ps[i] = 0xff
	}
	want[k.size-len(prefix)-len(hashed)-1] = 0
	copy(want[k.size-len(prefix)-len(hashed):], prefix)
	copy(want[k.size-len(hashed):], hashed)
	if !bytes.Equal(em, want) {
		return ErrVerification
	}
	return nil
}

// VerifyPSS verifies an RSASSA-PSS signature (RFC 8017 §8.1.2) of digest,
// the hash of the message under hash (SHA-256, SHA-384 or SHA-512), with MGF1
// over the same hash and the salt length detected from the signature — what
// crypto/rsa.VerifyPSS does with rsa.PSSSaltLengthAuto, as golang-jwt asks
// for PS256/384/512. It returns nil or [ErrVerification]; digest and sig are
// not modified or retained.
func (k *PublicKey) VerifyPSS(hash crypto.Hash, digest, sig []byte) error {
	return k.verifyPSS(hash, digest, sig, saltAuto)
}

// VerifyPSSSaltHash is [PublicKey.VerifyPSS] with the salt length fixed to
// the hash's size, as RFC 7518 §3.5 requires of PS256/384/512 — what
// crypto/rsa.VerifyPSS does with rsa.PSSSaltLengthEqualsHash.
func (k *PublicKey) VerifyPSSSaltHash(hash crypto.Hash, digest, sig []byte) error {
	return k.verifyPSS(hash, digest, sig, hash.Size())
}

// saltAuto asks emsaPSSVerify to detect the salt length.
const saltAuto = -1

func (k *PublicKey) verifyPSS(hash crypto.Hash, digest, sig []byte, sLen int) error {
	if hash != crypto.SHA256 && hash != crypto.SHA384 && hash != crypto.SHA512 {
		return ErrVerification
	}
	em, err := k.encrypt(sig)
	if err != nil {
		return err
	}
	emBits := k.bits - 1
	emLen := (emBits + 7) / 8
	// When the modulus's bit length is 1 mod 8, EM is one byte shorter than
	// the modulus, and that leading byte must be zero (as crypto/rsa does).
	for len(em) > emLen {
		if em[0] != 0 {
			return ErrVerification
		}
		em = em[1:]
	}
	return emsaPSSVerify(digest, em, emBits, sLen, hash)
}

// sum writes the hash of data under h (SHA-256, SHA-384 or SHA-512) into
// out and returns it. The one-shot functions keep their state on the stack,
// so unlike a hash.Hash this allocates nothing.
func sum(h crypto.Hash, out *[sha512.Size]byte, data []byte) []byte {
	switch h {
	case crypto.SHA256:
		s := sha256.Sum256(data)
		return append(out[:0], s[:]...)
	case crypto.SHA384:
		s := sha512.Sum384(data)
		return append(out[:0], s[:]...)
	default:
		s := sha512.Sum512(data)
		return append(out[:0], s[:]...)
	}
}

// emsaPSSVerify is EMSA-PSS-VERIFY (RFC 8017 §9.1.2) with the salt length
// sLen, or, for saltAuto, detected from the 0x01 delimiter, following
// crypto/internal/fips140/rsa's function of the same name step by step. em
// is modified.
func emsaPSSVerify(mHash, em []byte, emBits, sLen int, hash crypto.Hash) error {
	hLen := hash.Size()
	emLen := (emBits + 7) / 8
	if emLen != len(em) {
		return ErrVerification
	}
	// 2. mHash is given; it must be hLen bytes.
	if len(mHash) != hLen {
		return ErrVerification
	}
	// 3. emLen must hold the hash, an empty salt and the two fixed bytes.
	if emLen < hLen+2 {
		return ErrVerification
	}
	// 4. The rightmost octet of EM must be 0xbc.
	if em[emLen-1] != 0xbc {
		return ErrVerification
	}
	// 5. maskedDB is the leftmost emLen-hLen-1 octets, H the next hLen.
	db := em[:emLen-hLen-1]
	h := em[emLen-hLen-1 : emLen-1]
	// 6. The leftmost 8*emLen-emBits bits of maskedDB must be zero.
	bitMask := byte(0xff >> (8*emLen - emBits))
	if em[0]&^bitMask != 0 {
		return ErrVerification
	}
	// 7, 8. DB = maskedDB XOR MGF1(H, emLen-hLen-1).
	mgf1XOR(db, h, hash)
	// 9. Clear the leftmost 8*emLen-emBits bits of DB.
	db[0] &= bitMask
	// 10. DB = PS (zeros) || 0x01 || salt: the first 0x01 ends PS.
	psLen := bytes.IndexByte(db, 0x01)
	if psLen < 0 {
		return ErrVerification
	}
	for _, b := range db[:psLen] {
		if b != 0 {
			return ErrVerification
		}
	}
	// 11. The salt is the rest of DB: with a fixed sLen, PS must have left
	// exactly sLen octets (crypto/rsa places the 0x01 at emLen-hLen-sLen-2
	// and requires zeros before it: the same condition).
	salt := db[psLen+1:]
	if sLen != saltAuto && len(salt) != sLen {
		return ErrVerification
	}
	// 12, 13. H' = Hash(M') with M' = 0x00 × 8 || mHash || salt.
	var mBuf [8 + sha512.Size + 512]byte // M' of keys up to 4096 bits
	m := mBuf[:0]
	if n := 8 + len(mHash) + len(salt); n > len(mBuf) {
		m = make([]byte, 0, n)
	}
	m = append(m, 0, 0, 0, 0, 0, 0, 0, 0)
	m = append(m, mHash...)
	m = append(m, salt...)
	var out [sha512.Size]byte
	h0 := sum(hash, &out, m)
	// 14. H must equal H'.
	if !bytes.Equal(h0, h) {
		return ErrVerification
	}
	return nil
}

// mgf1XOR XORs into out the MGF1 mask (RFC 8017 §B.2.1) of seed.
func mgf1XOR(out, seed []byte, hash crypto.Hash) {
	var in [sha512.Size + 4]byte // seed || counter; seed is one digest
	n := copy(in[:], seed)
	counter := (*[4]byte)(in[n : n+4])
	var digest [sha512.Size]byte
	for done := 0; done < len(out); {
		d := sum(hash, &digest, in[:n+4])
		for i := 0; i < len(d) && done < len(out); i++ {
			out[done] ^= d[i]
			done++
		}
		incCounter(counter)
	}
}

// incCounter increments the big-endian 32-bit counter c.
func incCounter(c *[4]byte) {
	for i := 3; i >= 0; i-- {
		if c[i]++; c[i] != 0 {
			return
		}
	}
}
