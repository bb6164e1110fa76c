package ecverify

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"fmt"
	"math/big"
	"testing"
)

// TestCraftedR builds signatures around a chosen point R, for which no
// private key is needed: for any r ≠ 0, s and e, the public key
// Q = u₂⁻¹·(R − u₁·G) with u₁ = e/s and u₂ = r/s makes u₁·G + u₂·Q = R. That
// reaches what random signatures practically never do: R with x(R) ≥ n, so
// that only x(R) mod n equals r (the chance of that for a random R is
// 2⁻¹²⁹, 2⁻¹⁹⁴ and 2⁻²⁶² on P-256, P-384 and P-521), and R with a small x,
// so that r has leading zero bytes. Every verdict is also crypto/ecdsa's.
func TestCraftedR(t *testing.T) {
	testCraftedR(t, p256, elliptic.P256())
	testCraftedR(t, p384, elliptic.P384())
	testCraftedR(t, p521, elliptic.P521())
}

func testCraftedR[P point[P]](t *testing.T, c *curve[P], ec elliptic.Curve) {
	t.Run(c.name, func(t *testing.T) {
		n := c.n
		high, xHigh := pointWithX(t, c, new(big.Int).Add(n, big.NewInt(1)))
		if xHigh.Cmp(ec.Params().P) >= 0 {
			t.Fatalf("no point with n < x < p found")
		}
		low, xLow := pointWithX(t, c, big.NewInt(1))
		rHigh := new(big.Int).Sub(xHigh, n) // x(R) mod n
		s := new(big.Int).Div(n, big.NewInt(3))
		e := new(big.Int).Div(n, big.NewInt(5))
		one := big.NewInt(1)
		enc := func(v *big.Int) []byte { return v.FillBytes(make([]byte, c.size)) }
		tests := []struct {
			name    string
			R       P
			r, s, e *big.Int // the signature Q is made for (u₁·G + u₂·Q = R)
			rb, sb  []byte   // what Verify gets; nil: enc(r), enc(s)
			want    bool
		}{
			{name: "x(R) ≥ n, u₁ = 0, Q = R", R: high, r: rHigh, s: rHigh, e: new(big.Int), want: true},
			{name: "x(R) ≥ n", R: high, r: rHigh, s: s, e: e, want: true},
			{name: "x(R) ≥ n, r = x(R) not reduced", R: high, r: rHigh, s: s, e: e, rb: enc(xHigh), want: false},
			{name: "x(R) ≥ n, r + 1", R: high, r: rHigh, s: s, e: e, rb: enc(new(big.Int).Add(rHigh, one)), want: false},
			{name: "x(R) ≥ n, r − 1", R: high, r: rHigh, s: s, e: e, rb: enc(new(big.Int).Sub(rHigh, one)), want: false},
			// R is u₁·G + u₂·Q, but x(R) mod n is e, not r: the comparison
			// must be with r.
			{name: "x(R) mod n = e ≠ r", R: high, r: e, s: s, e: rHigh, want: false},
			{name: "small x, u₁ = 0, Q = R", R: low, r: xLow, s: xLow, e: new(big.Int), want: true},
			{name: "small x", R: low, r: xLow, s: s, e: e, want: true},
			// The same integers in fewer or more bytes: JWS fixes the length.
			{name: "small x, r one byte short", R: low, r: xLow, s: s, e: e, rb: enc(xLow)[1:], want: false},
			{name: "small x, r and s one byte short", R: low, r: xLow, s: xLow, e: new(big.Int), rb: enc(xLow)[1:], sb: enc(xLow)[1:], want: false},
			{name: "small x, r one byte long", R: low, r: xLow, s: s, e: e, rb: append([]byte{0}, enc(xLow)...), want: false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				pub := keyFor(t, c, ec, tt.R, tt.r, tt.s, tt.e)
				k, err := NewPublicKey(pub)
				if err != nil {
					t.Fatalf("NewPublicKey() = %v", err)
				}
				// The digest whose leftmost bits are e.
				digest := new(big.Int).Lsh(tt.e, uint(8*c.size-c.bits)).FillBytes(make([]byte, c.size))
				rb, sb := tt.rb, tt.sb
				if rb == nil {
					rb = enc(tt.r)
				}
				if sb == nil {
					sb = enc(tt.s)
				}
				got := k.Verify(digest, rb, sb)
				if got != tt.want {
					t.Errorf("Verify() = %v, want %v", got, tt.want)
				}
				// crypto/ecdsa takes integers; it agrees whenever the
				// encodings have the JWS length.
				if len(rb) == c.size && len(sb) == c.size {
					if std := ecdsa.Verify(pub, digest, new(big.Int).SetBytes(rb), new(big.Int).SetBytes(sb)); std != tt.want {
						t.Errorf("crypto/ecdsa.Verify() = %v, want %v", std, tt.want)
					}
				}
			})
		}
	})
}

// pointWithX returns the point with the smallest x ≥ from and an even y,
// and its x.
func pointWithX[P point[P]](t *testing.T, c *curve[P], from *big.Int) (P, *big.Int) {
	t.Helper()
	x := new(big.Int).Set(from)
	for range 256 {
		compressed := append([]byte{2}, x.FillBytes(make([]byte, c.size))...)
		if p, err := c.newPoint().SetBytes(compressed); err == nil {
			return p, x
		}
		x.Add(x, big.NewInt(1))
	}
	t.Fatalf("no point with x in [%x, %x)", from, x)
	return c.newPoint(), nil
}

// keyFor returns the public key Q = u₂⁻¹·(R − u₁·G), u₁ = e/s, u₂ = r/s, for
// which (r, s) is a signature of e with u₁·G + u₂·Q = R.
func keyFor[P point[P]](t *testing.T, c *curve[P], ec elliptic.Curve, R P, r, s, e *big.Int) *ecdsa.PublicKey {
	t.Helper()
	n := c.n
	sInv := new(big.Int).ModInverse(s, n)
	u1 := new(big.Int).Mul(e, sInv)
	u1.Mod(u1, n)
	u2 := new(big.Int).Mul(r, sInv)
	u2.Mod(u2, n)
	if u2.Sign() == 0 {
		t.Fatal("u₂ = 0: no key makes the signature")
	}
	minusU1 := new(big.Int).Sub(n, u1)
	minusU1.Mod(minusU1, n)
	tp, err := c.newPoint().ScalarBaseMult(minusU1.FillBytes(make([]byte, c.size)))
	if err != nil {
		t.Fatal(err)
	}
	tp.Add(tp, R)
	q, err := scalarMult(c.newPoint(), tp, new(big.Int).ModInverse(u2, n).FillBytes(make([]byte, c.size)))
	if err != nil {
		t.Fatal(err)
	}
	if q.IsInfinity() == 1 {
		t.Fatal("Q is the point at infinity")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(ec, bytesOf(q))
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// TestHashToIntEveryLength holds hashToInt, for every digest length from 0
// to 80 bytes on each curve, to a byte-wise transcription of crypto/ecdsa's
// hashToNat (truncate to the order's bytes, then shift right by the excess
// bits), modulo n.
func TestHashToIntEveryLength(t *testing.T) {
	for _, c := range []struct {
		name       string
		n          *big.Int
		size, bits int
	}{
		{p256.name, p256.n, p256.size, p256.bits},
		{p384.name, p384.n, p384.size, p384.bits},
		{p521.name, p521.n, p521.size, p521.bits},
	} {
		t.Run(c.name, func(t *testing.T) {
			for l := 0; l <= 80; l++ {
				for _, fill := range []func(i int) byte{
					func(int) byte { return 0xFF },
					func(i int) byte { return byte(i*37 + 11) },
				} {
					digest := make([]byte, l)
					for i := range digest {
						digest[i] = fill(i)
					}
					var got big.Int
					hashToInt(&got, digest, c.size, c.bits)
					want := new(big.Int).SetBytes(hashToNatBytes(digest, c.size, c.bits))
					if got.BitLen() > c.bits {
						t.Errorf("%d bytes %x: hashToInt has %d bits, more than n", l, digest, got.BitLen())
					}
					if got.Mod(&got, c.n).Cmp(want.Mod(want, c.n)) != 0 {
						t.Errorf("%d bytes %x: hashToInt mod n = %x, hashToNat = %x", l, digest, &got, want)
					}
				}
			}
		})
	}
}

// hashToNatBytes is crypto/internal/fips140/ecdsa's hashToNat before its
// reduction, with its byte-wise rightShift.
func hashToNatBytes(hash []byte, size, bits int) []byte {
	if len(hash) < size {
		return hash
	}
	b := bytes.Clone(hash[:size])
	shift := len(b)*8 - bits
	if shift == 0 {
		return b
	}
	if shift < 0 || shift >= 8 {
		panic(fmt.Sprintf("shift %d", shift))
	}
	for i := len(b) - 1; i >= 0; i-- {
		b[i] >>= shift
		if i > 0 {
			b[i] |= b[i-1] << (8 - shift)
		}
	}
	return b
}
