package rsaverify_test

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify/internal/rsaverify"
)

// FuzzVerify throws arbitrary bytes at both verifiers: almost none of them
// decrypt to anything near a valid encoding, so the checks past the first
// few are reached only by the crafted cases of TestCraftedEncodings.
// FuzzVerifyEncoded reaches all of them: it builds a well-formed PKCS #1
// v1.5 or PSS encoded message of a fuzzer-chosen message, hash and salt,
// applies the fuzzer's mutations to the encoding (before and after the PSS
// mask), the hash or the signature, signs the result with the key's private
// exponent (so the mutated encoding is what the public operation recovers),
// and requires rsaverify and crypto/rsa to agree — and to accept when
// nothing was mutated.

// encodedKey is one key of FuzzVerifyEncoded.
type encodedKey struct {
	priv *rsa.PrivateKey
	pub  *rsaverify.PublicKey
}

// encodedKeys are the key sizes the verifier meets (2048, 3072, 4096), the
// odd 2049 bits whose PSS encoding is a byte shorter than the modulus, and
// 2048-bit keys with the smallest and the largest public exponent crypto/rsa
// verifies with (3 and 2³¹−1; the others have 65537).
func encodedKeys(t testing.TB) []encodedKey {
	t.Helper()
	var privs []*rsa.PrivateKey
	for _, name := range []string{testkeys.RSA2048A, oddKey, testkeys.RSA3072, testkeys.RSA4096} {
		privs = append(privs, private(t, name))
	}
	for _, file := range []string{"testdata/rsa2048-e3.pem", "testdata/rsa2048-emax.pem"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(data)
		if block == nil {
			t.Fatalf("%s: no PEM block", file)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		privs = append(privs, k.(*rsa.PrivateKey))
	}
	keys := make([]encodedKey, len(privs))
	for i, p := range privs {
		p.Precompute()
		keys[i] = encodedKey{priv: p, pub: prepared(t, &p.PublicKey)}
	}
	return keys
}

// TestEncodedKeys checks that FuzzVerifyEncoded's keys are what it says.
func TestEncodedKeys(t *testing.T) {
	want := []struct{ bits, e int }{{2048, 65537}, {2049, 65537}, {3072, 65537}, {4096, 65537}, {2048, 3}, {2048, 1<<31 - 1}}
	keys := encodedKeys(t)
	if len(keys) != len(want) {
		t.Fatalf("%d keys, want %d", len(keys), len(want))
	}
	for i, k := range keys {
		if k.priv.N.BitLen() != want[i].bits || k.priv.E != want[i].e {
			t.Errorf("key %d: %d bits, e %d; want %d bits, e %d", i, k.priv.N.BitLen(), k.priv.E, want[i].bits, want[i].e)
		}
	}
}

// Mutations of FuzzVerifyEncoded: each is 4 bytes, op, position (2 bytes,
// taken modulo the target's length) and value.
const (
	opXorEM       = iota // XOR a byte of the final encoded message
	opSetEM              // set a byte of the final encoded message
	opXorDB              // PSS: XOR a byte of DB before masking (PKCS #1 v1.5: of EM)
	opSetDB              // PSS: set a byte of DB before masking (PKCS #1 v1.5: of EM)
	opXorH               // PSS: XOR a byte of H before DB is masked with it (PKCS #1 v1.5: of the digest in EM)
	opXorSig             // XOR a byte of the signature
	opResizeSig          // drop the signature's last byte, prepend a zero, or append one
	opSigPlusN           // add N to the signature (when it fits in the modulus size), or use N − sig
	opVerifyOther        // verify another message's digest
	numOps
)

// maxOps bounds the mutations of one input.
const maxOps = 8

func FuzzVerifyEncoded(f *testing.F) {
	keys := encodedKeys(f)
	msg := []byte("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0")
	for ki := range keys {
		for scheme := range 2 {
			for hi := range hashes {
				f.Add(uint8(ki), uint8(scheme), uint8(hi), uint8(hi), msg, bytes.Repeat([]byte{0x5A}, 32), []byte{})
			}
		}
		f.Add(uint8(ki), uint8(1), uint8(0), uint8(0), msg, []byte{}, []byte{})                     // PSS, empty salt
		f.Add(uint8(ki), uint8(1), uint8(2), uint8(2), msg, bytes.Repeat([]byte{1}, 600), []byte{}) // PSS, longest salt
		f.Add(uint8(ki), uint8(0), uint8(0), uint8(1), msg, []byte{}, []byte{})                     // another hash
		for _, c := range encodedMutations(keys[ki]) {
			f.Add(uint8(ki), c.scheme, uint8(0), uint8(0), msg, []byte{1, 2, 3, 4, 5, 6, 7}, c.ops)
		}
	}
	f.Fuzz(func(t *testing.T, ki, scheme, signHash, verifyHash uint8, msg, salt, ops []byte) {
		k := keys[int(ki)%len(keys)]
		in := encodedInput{pss: scheme%2 == 1, hs: hashes[int(signHash)%len(hashes)], hv: hashes[int(verifyHash)%len(hashes)], msg: msg, salt: salt, ops: ops}
		detail, ours, theirs := in.verify(k)
		if ours != nil && !errors.Is(ours, rsaverify.ErrVerification) {
			t.Fatalf("Verify() = %v, want nil or ErrVerification", ours)
		}
		if (ours == nil) != (theirs == nil) {
			t.Fatalf("%s: rsaverify = %v, crypto/rsa = %v", detail, ours, theirs)
		}
		if len(in.ops) < 4 && in.hv == in.hs && ours != nil {
			t.Fatalf("%s: an unmutated encoding does not verify: %v", detail, ours)
		}
	})
}

// encodedInput is one input of FuzzVerifyEncoded.
type encodedInput struct {
	pss            bool
	hs, hv         crypto.Hash // signed with hs, verified with hv
	msg, salt, ops []byte
}

// verify builds in's signature under k and returns a description for a
// failure and both verifiers' verdicts.
func (in *encodedInput) verify(k encodedKey) (detail string, ours, theirs error) {
	if len(in.ops) > 4*maxOps {
		in.ops = in.ops[:4*maxOps]
	}
	mHash := digest(in.hs, in.msg)
	var dbEdits, hEdits, emEdits, sigEdits []mutation
	otherMessage := false
	for i := 0; i+4 <= len(in.ops); i += 4 {
		m := mutation{op: in.ops[i] % numOps, pos: int(in.ops[i+1])<<8 | int(in.ops[i+2]), val: in.ops[i+3]}
		switch {
		case m.op == opVerifyOther:
			otherMessage = true
		case m.op >= opXorSig:
			sigEdits = append(sigEdits, m)
		case in.pss && m.op == opXorH:
			hEdits = append(hEdits, m)
		case in.pss && m.op >= opXorDB:
			dbEdits = append(dbEdits, m)
		case m.op == opXorH: // PKCS #1 v1.5: the digest's last byte
			emEdits = append(emEdits, mutation{op: opXorEM, pos: -1, val: m.val})
		default: // an edit of EM
			emEdits = append(emEdits, m)
		}
	}

	var em []byte
	if in.pss {
		em = encodePSS(k.priv, in.hs, mHash, in.salt, dbEdits, hEdits)
	} else {
		em = encodePKCS1v15(k.priv.Size(), in.hs, mHash)
	}
	for _, m := range emEdits {
		m.apply(em)
	}
	sig := privateOp(k.priv, em)
	for _, m := range sigEdits {
		sig = m.applySig(sig, k.priv.N)
	}

	vd := mHash
	if in.hv != in.hs || otherMessage {
		m := in.msg
		if otherMessage {
			m = append([]byte("other:"), m...)
		}
		vd = digest(in.hv, m)
	}
	sc := schemes[0]
	if in.pss {
		sc = schemes[1]
	}
	detail = fmt.Sprintf("%d-bit e=%d %s signed %v verified %v, ops %x (em %x, sig %x)",
		k.priv.N.BitLen(), k.priv.E, sc.name, in.hs, in.hv, in.ops, em, sig)
	return detail, sc.ours(k.pub, in.hv, vd, sig), sc.stdlib(&k.priv.PublicKey, in.hv, vd, sig)
}

// encodedMutation is a mutation list that must make the signature invalid.
type encodedMutation struct {
	name   string
	scheme uint8 // 0 PKCS #1 v1.5, 1 PSS
	ops    []byte
}

// encodedMutations breaks one rule of each encoding per case, for key k
// and a 7-byte salt under SHA-256 (the positions depend on the key's size).
func encodedMutations(k encodedKey) []encodedMutation {
	size := k.priv.Size()
	emLen := (k.priv.N.BitLen() - 1 + 7) / 8
	dbLen := emLen - 32 - 1
	at := func(op byte, pos int, val byte) []byte { return []byte{op, byte(pos >> 8), byte(pos), val} }
	return []encodedMutation{
		{"pkcs1-leading-byte", 0, at(opSetEM, 0, 1)},
		{"pkcs1-block-type-2", 0, at(opSetEM, 1, 2)},
		{"pkcs1-zero-in-padding", 0, at(opSetEM, 20, 0)},
		{"pkcs1-separator", 0, at(opSetEM, size-51-1, 0xff)},
		{"pkcs1-digest-info", 0, at(opXorEM, size-40, 0x01)},
		{"pkcs1-digest", 0, at(opXorH, 0, 0x01)},
		{"pkcs1-signature-bit", 0, at(opXorSig, size/2, 0x10)},
		{"pkcs1-signature-short", 0, at(opResizeSig, 0, 0)},
		{"pkcs1-signature-long", 0, at(opResizeSig, 0, 2)},
		{"pkcs1-signature-plus-n", 0, at(opSigPlusN, 0, 0)},
		{"pkcs1-other-message", 0, at(opVerifyOther, 0, 0)},
		{"pss-padding-nonzero", 1, at(opXorDB, 0, 0x01)},
		{"pss-separator-cleared", 1, at(opSetDB, dbLen-7-1, 0)},
		{"pss-separator-moved", 1, append(at(opSetDB, dbLen-7-1, 0), at(opSetDB, dbLen-7, 1)...)},
		{"pss-salt", 1, at(opXorDB, dbLen-1, 0x04)},
		{"pss-hash", 1, at(opXorH, 5, 0x01)},
		{"pss-masked-hash", 1, at(opXorEM, size-2, 0x01)},
		{"pss-trailer", 1, at(opXorEM, size-1, 0x01)},
		{"pss-signature-bit", 1, at(opXorSig, 3, 0x80)},
		{"pss-other-message", 1, at(opVerifyOther, 0, 0)},
	}
}

// TestEncodedMutations checks FuzzVerifyEncoded's machinery: each of its
// named mutations makes both verifiers refuse, on every key, and the same
// inputs without mutation are accepted by both.
func TestEncodedMutations(t *testing.T) {
	for ki, k := range encodedKeys(t) {
		for _, c := range encodedMutations(k) {
			t.Run(fmt.Sprintf("key-%d/%s", ki, c.name), func(t *testing.T) {
				salt := []byte{1, 2, 3, 4, 5, 6, 7}
				in := encodedInput{pss: c.scheme == 1, hs: crypto.SHA256, hv: crypto.SHA256, msg: []byte("m"), salt: salt}
				if detail, ours, theirs := in.verify(k); ours != nil || theirs != nil {
					t.Fatalf("%s unmutated: rsaverify = %v, crypto/rsa = %v, want both nil", detail, ours, theirs)
				}
				in.ops = c.ops
				detail, ours, theirs := in.verify(k)
				if ours == nil || theirs == nil {
					t.Fatalf("%s: rsaverify = %v, crypto/rsa = %v, want both to refuse", detail, ours, theirs)
				}
			})
		}
	}
}

// mutation is one edit of FuzzVerifyEncoded.
type mutation struct {
	op  byte
	pos int // modulo the target's length; -1 is the last byte
	val byte
}

// apply makes an XOR or set edit of b: an XOR never with zero, so that it
// always changes b.
func (m mutation) apply(b []byte) {
	if len(b) == 0 {
		return
	}
	i := len(b) - 1
	if m.pos >= 0 {
		i = m.pos % len(b)
	}
	switch m.op {
	case opSetEM, opSetDB:
		b[i] = m.val
	default:
		b[i] ^= max(m.val, 1)
	}
}

// applySig returns sig with a signature edit made (sig is not modified).
func (m mutation) applySig(sig []byte, n *big.Int) []byte {
	size := len(sig)
	switch m.op {
	case opXorSig:
		s := bytes.Clone(sig)
		mutation{op: opXorEM, pos: m.pos, val: m.val}.apply(s)
		return s
	case opResizeSig:
		switch m.val % 3 {
		case 0:
			return sig[:max(size-1, 0)]
		case 1:
			return append([]byte{0}, sig...)
		default:
			return append(bytes.Clone(sig), 0)
		}
	default: // opSigPlusN
		s := new(big.Int).SetBytes(sig)
		if p := new(big.Int).Add(s, n); (p.BitLen()+7)/8 <= size {
			return p.FillBytes(make([]byte, size))
		}
		if s.Cmp(n) < 0 {
			return new(big.Int).Sub(n, s).FillBytes(make([]byte, max(size, (n.BitLen()+7)/8)))
		}
		return sig
	}
}

// encodePKCS1v15 is EMSA-PKCS1-v1_5-ENCODE (RFC 8017 §9.2) into k bytes.
func encodePKCS1v15(k int, h crypto.Hash, digest []byte) []byte {
	prefix := map[crypto.Hash][]byte{
		crypto.SHA256: {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20},
		crypto.SHA384: {0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30},
		crypto.SHA512: {0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40},
	}[h]
	t := append(bytes.Clone(prefix), digest...)
	em := bytesOf(0xff, k)
	em[0], em[1] = 0, 1
	em[k-len(t)-1] = 0
	copy(em[k-len(t):], t)
	return em
}

// encodePSS is EMSA-PSS-ENCODE (RFC 8017 §9.1.1) with emBits = bits(N) − 1,
// the salt cut to what fits, and the fuzzer's edits of DB and H made before
// DB is masked. It returns the encoding padded to the modulus size.
func encodePSS(priv *rsa.PrivateKey, h crypto.Hash, mHash, salt []byte, dbEdits, hEdits []mutation) []byte {
	emBits := priv.N.BitLen() - 1
	emLen := (emBits + 7) / 8
	hLen := h.Size()
	salt = salt[:min(len(salt), emLen-hLen-2)]
	mPrime := append(append(make([]byte, 8), mHash...), salt...)
	hh := digest(h, mPrime)
	db := make([]byte, emLen-hLen-1)
	db[len(db)-len(salt)-1] = 0x01
	copy(db[len(db)-len(salt):], salt)
	for _, m := range dbEdits {
		m.apply(db)
	}
	for _, m := range hEdits {
		m.apply(hh)
	}
	mgf1XOR(db, h, hh)
	db[0] &= 0xff >> (8*emLen - emBits)
	em := append(append(db, hh...), 0xbc)
	if emLen < priv.Size() {
		em = append([]byte{0}, em...)
	}
	return em
}

// mgf1XOR XORs MGF1(seed, len(out)) into out (RFC 8017 §B.2.1).
func mgf1XOR(out []byte, h crypto.Hash, seed []byte) {
	var counter [4]byte
	for done := 0; done < len(out); {
		d := digest(h, append(bytes.Clone(seed), counter[:]...))
		done += copy(out[done:], xorBytes(out[done:], d))
		for i := 3; i >= 0; i-- {
			if counter[i]++; counter[i] != 0 {
				break
			}
		}
	}
}

func xorBytes(a, b []byte) []byte {
	n := min(len(a), len(b))
	x := make([]byte, n)
	for i := range n {
		x[i] = a[i] ^ b[i]
	}
	return x
}

// privateOp returns em^d mod N (em taken mod N), by the Chinese remainder
// theorem: the signature whose public operation recovers em.
func privateOp(priv *rsa.PrivateKey, em []byte) []byte {
	c := new(big.Int).SetBytes(em)
	p, q := priv.Primes[0], priv.Primes[1]
	pc := priv.Precomputed
	m1 := new(big.Int).Exp(new(big.Int).Mod(c, p), pc.Dp, p)
	m2 := new(big.Int).Exp(new(big.Int).Mod(c, q), pc.Dq, q)
	h := m1.Sub(m1, m2)
	h.Mul(h, pc.Qinv).Mod(h, p)
	m := h.Mul(h, q).Add(h, m2)
	return m.FillBytes(make([]byte, priv.Size()))
}
