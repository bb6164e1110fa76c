// Package ecverify verifies ECDSA signatures on the NIST curves P-256, P-384
// and P-521 (FIPS 186-5 §6.4.2) with a public key prepared once.
//
// An ECDSA verification computes R = u₁·G + u₂·Q. crypto/ecdsa multiplies
// the generator G with a precomputed table, but the public key Q from
// scratch: a constant-time double-and-add over every bit of u₂ (256
// doublings for P-256), which is two thirds of a verify. A JWT verifier
// checks many signatures with few keys, so [PublicKey] precomputes, the
// first time the key verifies, a table of multiples of Q at regular
// intervals of the scalar (a fixed-base comb, as Go does for G): u₂·Q then
// takes one addition per signed 5-bit digit of u₂ and 15 doublings. The
// table costs 22 KB for a P-256 key, 57 KB for P-384 and 118 KB for P-521,
// and a one-time 0.2, 1.1 and 4.8 ms (measured below).
//
// The group arithmetic is filippo.io/nistec, the exported copy of Go's
// crypto/internal/fips140/nistec that crypto/ecdsa runs on: its complete,
// constant-time point addition handles every special case (equal points,
// opposite points, the point at infinity), so the only new code here is the
// scalar recoding, the table and the modular arithmetic of the signature
// scalars (math/big). Verification handles public data only (the key, the
// message, the signature), so the digit-dependent branches and table
// indexes leak nothing secret.
//
// BenchmarkVerify and BenchmarkFirstUse (ecverify_test.go), go1.26.8
// linux/amd64, the 2-core shared development machine, -count 6, benchstat
// -col /impl (medians; the machine's noise is ±5–18%):
//
//	         crypto/ecdsa               ecverify                    first use (table)
//	P-256     79.4µs  576 B 10 allocs    44.6µs (−44%)  664 B 13 allocs    200µs  22 KB
//	P-384      820µs  808 B 17 allocs     268µs (−67%)  968 B 15 allocs   1.07ms  57 KB
//	P-521     3.42ms 1.2 KB 17 allocs    1.15ms (−66%) 1.1 KB 15 allocs   4.76ms 118 KB
//
// The allocations are math/big's (ModInverse) and nistec's (BytesX); the
// rest of the working memory is pooled.
//
// The differential tests (random keys and digests, valid signatures and
// their mutations, and crafted signatures whose R is the point at infinity
// or whose two halves are the same point, and keys built for a chosen R
// with x(R) ≥ n), TestMulQ (edge scalars against nistec's ScalarMult),
// FuzzVerify and FuzzVerifySigned hold the package to crypto/ecdsa's
// verdicts.
//
// Use crypto/ecdsa instead when the FIPS 140-3 module must do the work
// (GODEBUG=fips140=on) or when BoringCrypto is linked in: [Enabled] reports
// false then.
package ecverify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"errors"
	"fmt"
	"math/big"
	"sync"

	"filippo.io/nistec"
)

// point is the part of a nistec point type this package uses.
type point[P any] interface {
	*nistec.P256Point | *nistec.P384Point | *nistec.P521Point
	Set(P) P
	SetBytes([]byte) (P, error)
	Add(P, P) P
	Double(P) P
	Negate(P) P
	IsInfinity() int
	ScalarBaseMult([]byte) (P, error)
	BytesX() ([]byte, error)
}

// curve describes a curve and the shape of its key tables.
//
// A scalar k < 2^bits is recoded into digits signed digits d_i in
// [−2^(w−1)+1, 2^(w−1)] with k = Σ d_i·2^(w·i). The digits are taken in rows of
// m consecutive digits: row a of a key's table holds j·2^(w·m·a)·Q for
// j = 1 … 2^(w−1), and k·Q is computed Horner-style over the m digit
// positions of a row: w·(m−1) doublings, one addition per non-zero digit.
type curve[P point[P]] struct {
	name     string
	newPoint func() P
	n        *big.Int // the order of the group
	size     int      // bytes of a scalar and of r and s in a JWS signature
	bits     int      // bits of n
	w, m     int      // digit width and digits per table row
	digits   int      // ⌈(bits+1)/w⌉: enough for the last carry
	rows     int      // ⌈digits/m⌉
	infinity P        // the point at infinity, never modified
	scratch  sync.Pool
}

func newCurve[P point[P]](name string, newPoint func() P, params *elliptic.CurveParams, w, m int) *curve[P] {
	c := &curve[P]{
		name:     name,
		newPoint: newPoint,
		n:        params.N,
		size:     (params.N.BitLen() + 7) / 8,
		bits:     params.N.BitLen(),
		w:        w,
		m:        m,
	}
	c.digits = (c.bits + 1 + w - 1) / w
	c.rows = (c.digits + m - 1) / m
	if c.digits > maxDigits || c.size > maxSize || w < 2 || w > 7 || m < 1 {
		panic("ecverify: curve shape exceeds the scratch arrays")
	}
	c.infinity = newPoint()
	c.scratch.New = func() any {
		return &scratch[P]{p1: newPoint(), acc: newPoint(), neg: newPoint()}
	}
	return c
}

// The table shapes: 2^(w−1)·rows points per key, and the work of u₂·Q
// (crypto/ecdsa's is a windowed double-and-add over every bit: 256, 384
// and 521 doublings, plus a table of 15 or 16 points built per call):
//
//	P-256: 16 × 13 = 208 points,  52 additions, 15 doublings
//	P-384: 16 × 20 = 320 points,  77 additions, 15 doublings
//	P-521: 16 × 27 = 432 points, 105 additions, 15 doublings
var (
	p256 = newCurve("P-256", nistec.NewP256Point, elliptic.P256().Params(), 5, 4)
	p384 = newCurve("P-384", nistec.NewP384Point, elliptic.P384().Params(), 5, 4)
	p521 = newCurve("P-521", nistec.NewP521Point, elliptic.P521().Params(), 5, 4)
)

// maxDigits bounds curve.digits (P-521: ⌈522/5⌉ = 105).
const maxDigits = 105

// maxSize bounds curve.size (P-521: 66).
const maxSize = 66

// PublicKey is an ECDSA public key prepared for repeated verification.
// It is safe for concurrent use.
type PublicKey struct {
	v    verifier
	size int
}

type verifier interface {
	verify(digest, r, s []byte) bool
}

// NewPublicKey prepares pub for verification. It refuses a key on a curve
// other than P-256, P-384 and P-521 and a point that is not on its curve.
// The key's table is built by the first verification, not here, so that a
// large key set costs only what its keys in use cost.
func NewPublicKey(pub *ecdsa.PublicKey) (*PublicKey, error) {
	if pub == nil || pub.Curve == nil {
		return nil, errors.New("ecverify: missing public key")
	}
	raw, err := pub.Bytes() // checks the point is on the curve
	if err != nil {
		return nil, fmt.Errorf("ecverify: %w", err)
	}
	switch pub.Curve {
	case elliptic.P256():
		return newKey(p256, raw)
	case elliptic.P384():
		return newKey(p384, raw)
	case elliptic.P521():
		return newKey(p521, raw)
	}
	return nil, fmt.Errorf("ecverify: unsupported curve %s", pub.Curve.Params().Name)
}

func newKey[P point[P]](c *curve[P], raw []byte) (*PublicKey, error) {
	q, err := c.newPoint().SetBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("ecverify: %w", err)
	}
	if q.IsInfinity() == 1 {
		return nil, errors.New("ecverify: public key is the point at infinity")
	}
	return &PublicKey{v: &key[P]{c: c, q: q}, size: c.size}, nil
}

// Verify reports whether r and s, big-endian and as many bytes each as the
// curve's order (RFC 7518 §3.4: 32, 48 or 66), are a valid ECDSA signature of
// digest under k. Like crypto/ecdsa, it takes the leftmost bits of a digest
// longer than the order. r or s of another length, zero, or not below the
// order fail.
func (k *PublicKey) Verify(digest, r, s []byte) bool {
	if k == nil || k.v == nil || len(r) != k.size || len(s) != k.size {
		return false
	}
	return k.v.verify(digest, r, s)
}

type key[P point[P]] struct {
	c *curve[P]
	q P

	once  sync.Once
	table []P // c.rows rows of 2^(w−1) points; see curve
}

func (k *key[P]) verify(digest, rb, sb []byte) bool {
	c := k.c
	sc := c.scratch.Get().(*scratch[P])
	defer c.scratch.Put(sc)
	r, s, e, w, u1, u2 := &sc.r, &sc.s, &sc.e, &sc.w, &sc.u1, &sc.u2
	r.SetBytes(rb)
	s.SetBytes(sb)
	if r.Sign() == 0 || s.Sign() == 0 || r.Cmp(c.n) >= 0 || s.Cmp(c.n) >= 0 {
		return false
	}
	hashToInt(e, digest, c.size, c.bits)
	if w.ModInverse(s, c.n) == nil { // n is prime and 0 < s < n: never
		return false
	}
	u1.Mul(e, w).Mod(u1, c.n)
	u2.Mul(r, w).Mod(u2, c.n)

	p1, err := sc.p1.ScalarBaseMult(u1.FillBytes(sc.buf[:c.size]))
	if err != nil {
		return false
	}
	p1.Add(p1, k.mulQ(sc, u2.FillBytes(sc.buf[:c.size])))
	if p1.IsInfinity() == 1 {
		return false
	}
	x, err := p1.BytesX()
	if err != nil {
		return false
	}
	v := sc.w.SetBytes(x) // w is no longer needed
	v.Mod(v, c.n)         // x < p, which may exceed n
	return v.Cmp(r) == 0
}

// scratch is the working memory of one verification, pooled per curve: the
// big.Ints keep their backing arrays and the points their field elements,
// so that a verification allocates only inside math/big's ModInverse and
// nistec's BytesX.
type scratch[P point[P]] struct {
	r, s, e, w, u1, u2 big.Int
	p1, acc, neg       P
	buf                [maxSize]byte
	digits             [maxDigits]int8
}

// hashToInt sets e to the digest as ECDSA uses it: its leftmost bits bits
// when it is at least size bytes long (what crypto/ecdsa's hashToNat does).
// e may still be above n; the multiplications reduce it.
func hashToInt(e *big.Int, digest []byte, size, bits int) {
	if len(digest) >= size {
		digest = digest[:size]
		e.SetBytes(digest)
		if excess := len(digest)*8 - bits; excess > 0 {
			e.Rsh(e, uint(excess))
		}
		return
	}
	e.SetBytes(digest)
}

// mulQ returns scalar·Q for the big-endian scalar (c.size bytes, below n),
// in sc.acc.
func (k *key[P]) mulQ(sc *scratch[P], scalar []byte) P {
	c := k.c
	k.once.Do(k.buildTable)
	digits := recode(sc.digits[:c.digits], scalar, c.w)
	half := 1 << (c.w - 1)
	acc, neg := sc.acc.Set(c.infinity), sc.neg
	for b := c.m - 1; b >= 0; b-- {
		if b < c.m-1 {
			for range c.w {
				acc.Double(acc)
			}
		}
		for a := 0; a*c.m+b < len(digits); a++ {
			switch d := int(digits[a*c.m+b]); {
			case d > 0:
				acc.Add(acc, k.table[a*half+d-1])
			case d < 0:
				acc.Add(acc, neg.Negate(k.table[a*half-d-1]))
			}
		}
	}
	return acc
}

// buildTable fills k.table: row a holds j·2^(w·m·a)·Q for j = 1 … 2^(w−1).
func (k *key[P]) buildTable() {
	c := k.c
	half := 1 << (c.w - 1)
	table := make([]P, c.rows*half)
	base := c.newPoint().Set(k.q)
	for a := range c.rows {
		row := table[a*half : (a+1)*half]
		row[0] = c.newPoint().Set(base)
		for j := 1; j < half; j++ {
			row[j] = c.newPoint().Add(row[j-1], base)
		}
		if a+1 < c.rows {
			for range c.w * c.m {
				base.Double(base)
			}
		}
	}
	k.table = table
}

// recode writes to digits (len(digits)·w ≥ bits of scalar + 1) the signed
// w-bit digits d_i of the big-endian scalar: scalar = Σ d_i·2^(w·i) with
// d_i in [−2^(w−1)+1, 2^(w−1)]. w is at most 7 (a digit is an int8).
func recode(digits []int8, scalar []byte, w int) []int8 {
	carry := 0
	for i := range digits {
		v := bitsAt(scalar, i*w, w) + carry
		if v > 1<<(w-1) {
			digits[i], carry = int8(v-1<<w), 1
		} else {
			digits[i], carry = int8(v), 0
		}
	}
	if carry != 0 {
		panic("ecverify: scalar too long for its digits")
	}
	return digits
}

// bitsAt returns the w bits (w ≤ 8) of the big-endian s starting at bit pos
// (bit 0 is the least significant); bits past the end of s are zero.
func bitsAt(s []byte, pos, w int) int {
	i, shift := pos/8, pos%8
	v := 0
	if i < len(s) {
		v = int(s[len(s)-1-i])
	}
	if i+1 < len(s) {
		v |= int(s[len(s)-2-i]) << 8
	}
	return v >> shift & (1<<w - 1)
}
