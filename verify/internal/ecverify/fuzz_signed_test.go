package ecverify_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"testing"

	"github.com/jwksverify/jwksverify/verify/internal/ecverify"
)

// FuzzVerifySigned reaches the accepting path, which FuzzVerify's arbitrary
// r and s practically never do: it signs the fuzzer's digest (of any length)
// with the curve's test key, then XORs the fuzzer's mask into r||s, so that
// an empty or all-zero mask leaves a valid signature and a small one a
// near-valid one. ecverify must agree with crypto/ecdsa, and accept every
// valid signature.
func FuzzVerifySigned(f *testing.F) {
	privs := make([]*ecdsa.PrivateKey, len(curves))
	pubs := make([]*ecverify.PublicKey, len(curves))
	for i, c := range curves {
		privs[i] = private(f, c.key)
		pubs[i] = prepared(f, &privs[i].PublicKey)
		for _, l := range []int{0, c.size - 1, c.size, 80} {
			f.Add(uint8(i), bytes.Repeat([]byte{0xA5}, l), []byte{})
		}
		f.Add(uint8(i), bytes.Repeat([]byte{0xFF}, c.size+1), []byte{0, 0, 1})
	}
	f.Fuzz(func(t *testing.T, ki uint8, digest, mask []byte) {
		i := int(ki) % len(curves)
		c := curves[i]
		ri, si, err := ecdsa.Sign(rand.Reader, privs[i], digest)
		if err != nil {
			t.Fatal(err)
		}
		sig := append(pad(ri, c.size), pad(si, c.size)...)
		valid := true
		for j := range min(len(mask), len(sig)) {
			sig[j] ^= mask[j]
			valid = valid && mask[j] == 0
		}
		r, s := sig[:c.size], sig[c.size:]
		ours := pubs[i].Verify(digest, r, s)
		if theirs := stdlib(&privs[i].PublicKey, digest, r, s); ours != theirs {
			t.Fatalf("%s: ecverify = %v, crypto/ecdsa = %v (digest %x, r %x, s %x)", c.name, ours, theirs, digest, r, s)
		}
		if valid && !ours {
			t.Fatalf("%s: a valid signature does not verify (digest %x, r %x, s %x)", c.name, digest, r, s)
		}
	})
}
