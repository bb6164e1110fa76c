package ecverify

import (
	"bytes"
	"crypto/rand"
	"math/big"
	"testing"
)

// edgeScalars returns scalars below n that stress the recoding: zero, small
// values, digits at the limits of their range (16 = 2^(w−1) stays positive,
// 17 becomes −15 with a carry), runs of carries, the top of the range and
// powers of two around every row boundary, plus random ones.
func edgeScalars(t *testing.T, n *big.Int) []*big.Int {
	t.Helper()
	var ks []*big.Int
	for _, v := range []int64{0, 1, 2, 15, 16, 17, 31, 32, 33, 0x10842, 0x21084, 1<<20 - 1, 1 << 20} {
		ks = append(ks, big.NewInt(v))
	}
	one := big.NewInt(1)
	for _, sub := range []int64{1, 2, 3, 16, 17} {
		ks = append(ks, new(big.Int).Sub(n, big.NewInt(sub)))
	}
	ks = append(ks, new(big.Int).Rsh(n, 1), new(big.Int).Add(new(big.Int).Rsh(n, 1), one))
	for bit := 0; bit < n.BitLen(); bit += 19 {
		p := new(big.Int).Lsh(one, uint(bit))
		ks = append(ks, p, new(big.Int).Sub(p, one))
	}
	// Every 5-bit digit 0b10000 or 0b10001 (carry chains of both kinds).
	for _, pat := range []int64{0b10000, 0b10001, 0b11111} {
		k := new(big.Int)
		for bit := 0; bit+5 < n.BitLen(); bit += 5 {
			k.Or(k, new(big.Int).Lsh(big.NewInt(pat), uint(bit)))
		}
		ks = append(ks, k.Mod(k, n))
	}
	for range 16 {
		k, err := rand.Int(rand.Reader, n)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	return ks
}

func TestRecode(t *testing.T) {
	for _, w := range []int{2, 4, 5, 6, 7} {
		n := p521.n
		for _, k := range edgeScalars(t, n) {
			digits := make([]int8, (n.BitLen()+1+w-1)/w)
			recode(digits, k.FillBytes(make([]byte, 66)), w)
			sum := new(big.Int)
			for i := len(digits) - 1; i >= 0; i-- {
				d := int(digits[i])
				if d > 1<<(w-1) || d < -(1<<(w-1)) {
					t.Fatalf("w=%d k=%x: digit %d = %d out of range", w, k, i, d)
				}
				sum.Lsh(sum, uint(w)).Add(sum, big.NewInt(int64(d)))
			}
			if sum.Cmp(k) != 0 {
				t.Errorf("w=%d: recode(%x) sums to %x", w, k, sum)
			}
		}
	}
}

// TestMulQ compares the table multiplication with nistec's ScalarMult for
// every curve and edge scalar (the verification tests cover random ones).
func TestMulQ(t *testing.T) {
	testMulQ(t, p256)
	testMulQ(t, p384)
	testMulQ(t, p521)
}

func testMulQ[P point[P]](t *testing.T, c *curve[P]) {
	t.Run(c.name, func(t *testing.T) {
		// Q = 7·G: any point of the group works.
		seven := make([]byte, c.size)
		seven[c.size-1] = 7
		q, err := c.newPoint().ScalarBaseMult(seven)
		if err != nil {
			t.Fatal(err)
		}
		k := &key[P]{c: c, q: q}
		for _, s := range edgeScalars(t, c.n) {
			scalar := s.FillBytes(make([]byte, c.size))
			want, err := scalarMult(c.newPoint(), q, scalar)
			if err != nil {
				t.Fatal(err)
			}
			got := k.mulQ(c.scratch.Get().(*scratch[P]), scalar)
			if got.IsInfinity() != want.IsInfinity() {
				t.Fatalf("mulQ(%x): infinity %d, want %d", s, got.IsInfinity(), want.IsInfinity())
			}
			if want.IsInfinity() == 1 {
				continue
			}
			gx, _ := got.BytesX()
			wx, _ := want.BytesX()
			if !bytes.Equal(gx, wx) || !bytes.Equal(bytesOf(got), bytesOf(want)) {
				t.Errorf("mulQ(%x) differs from ScalarMult", s)
			}
		}
	})
}

// scalarMult sets p = scalar·q with nistec's own constant-time ScalarMult,
// which every nistec point type has but the point constraint leaves out
// (the package does not use it).
func scalarMult[P point[P]](p, q P, scalar []byte) (P, error) {
	return any(p).(interface {
		ScalarMult(P, []byte) (P, error)
	}).ScalarMult(q, scalar)
}

// bytesOf is the uncompressed encoding of p, which every nistec point type
// has but the point constraint leaves out.
func bytesOf(p any) []byte {
	return p.(interface{ Bytes() []byte }).Bytes()
}

func TestHashToInt(t *testing.T) {
	tests := []struct {
		name   string
		digest []byte
		size   int
		bits   int
		want   string // hex
	}{
		{"shorter than the order", []byte{1, 2}, 32, 256, "102"},
		{"as long", bytes.Repeat([]byte{0xAB}, 32), 32, 256, "ab" + string(bytes.Repeat([]byte("ab"), 31))},
		{"longer: truncated", append(bytes.Repeat([]byte{0xAB}, 32), 0xCD), 32, 256, "ab" + string(bytes.Repeat([]byte("ab"), 31))},
		{"P-521 length: shifted by 7", append([]byte{0x80}, make([]byte, 65)...), 66, 521, "1" + string(bytes.Repeat([]byte("0"), 130))},
		{"P-521, SHA-512 length: not shifted", append([]byte{0x80}, make([]byte, 63)...), 66, 521, "8" + string(bytes.Repeat([]byte("0"), 127))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e big.Int
			hashToInt(&e, tt.digest, tt.size, tt.bits)
			if got := e.Text(16); got != tt.want {
				t.Errorf("hashToInt() = %s, want %s", got, tt.want)
			}
		})
	}
}
