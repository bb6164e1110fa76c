package ecverify_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math/big"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify/internal/ecverify"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// curves are the curves of the test keys, with the scalar size of each.
var curves = []struct {
	name  string
	key   string
	curve elliptic.Curve
	size  int
}{
	{"P-256", testkeys.EC256A, elliptic.P256(), 32},
	{"P-384", testkeys.EC384, elliptic.P384(), 48},
	{"P-521", testkeys.EC521, elliptic.P521(), 66},
}

func private(t testing.TB, name string) *ecdsa.PrivateKey {
	t.Helper()
	k, ok := testkeys.Private(name).(*ecdsa.PrivateKey)
	if !ok {
		t.Fatalf("testkeys.Private(%q) is %T, want *ecdsa.PrivateKey", name, testkeys.Private(name))
	}
	return k
}

func prepared(t testing.TB, pub *ecdsa.PublicKey) *ecverify.PublicKey {
	t.Helper()
	k, err := ecverify.NewPublicKey(pub)
	if err != nil {
		t.Fatalf("NewPublicKey() = %v", err)
	}
	return k
}

// pad returns v big-endian in size bytes, or nil when it does not fit.
func pad(v *big.Int, size int) []byte {
	if v.Sign() < 0 || v.BitLen() > 8*size {
		return nil
	}
	return v.FillBytes(make([]byte, size))
}

// stdlib is crypto/ecdsa's verdict on the JWS-form signature r||s.
func stdlib(pub *ecdsa.PublicKey, digest, r, s []byte) bool {
	return ecdsa.Verify(pub, digest, new(big.Int).SetBytes(r), new(big.Int).SetBytes(s))
}

// check fails t when ecverify and crypto/ecdsa disagree on a signature, and
// returns the verdict.
func check(t *testing.T, pub *ecdsa.PublicKey, k *ecverify.PublicKey, what string, digest, r, s []byte) bool {
	t.Helper()
	ours := k.Verify(digest, r, s)
	theirs := stdlib(pub, digest, r, s)
	if ours != theirs {
		t.Errorf("%s: ecverify = %v, crypto/ecdsa = %v (digest %x, r %x, s %x)", what, ours, theirs, digest, r, s)
	}
	return ours
}

// TestDifferential signs random digests of every length that matters (empty,
// shorter than the order, exactly its size, longer, so truncated, and for
// P-521 with the 7-bit shift) with fresh and fixed keys, and checks that
// ecverify and crypto/ecdsa agree on the signature and on its mutations.
func TestDifferential(t *testing.T) {
	for _, c := range curves {
		t.Run(c.name, func(t *testing.T) {
			fresh, err := ecdsa.GenerateKey(c.curve, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			keys := []*ecdsa.PrivateKey{private(t, c.key), fresh}
			n := c.curve.Params().N
			for ki, priv := range keys {
				pub := prepared(t, &priv.PublicKey)
				for _, dl := range []int{0, 1, 20, 32, 48, 64, 66, 80} {
					digest := make([]byte, dl)
					rand.Read(digest)
					ri, si, err := ecdsa.Sign(rand.Reader, priv, digest)
					if err != nil {
						t.Fatal(err)
					}
					r, s := pad(ri, c.size), pad(si, c.size)
					what := fmt.Sprintf("key %d, %d-byte digest", ki, dl)
					if !check(t, &priv.PublicKey, pub, what+": valid", digest, r, s) {
						t.Errorf("%s: a valid signature does not verify", what)
					}
					for _, m := range mutations(n, c.size, digest, r, s) {
						check(t, &priv.PublicKey, pub, what+": "+m.name, m.digest, m.r, m.s)
					}
				}
			}
		})
	}
}

type mutation struct {
	name         string
	digest, r, s []byte
}

// mutations returns variants of a valid signature: flipped bits, swapped and
// out-of-range halves, and the other valid signature (r, n−s).
func mutations(n *big.Int, size int, digest, r, s []byte) []mutation {
	flip := func(b []byte, bit int) []byte {
		c := append([]byte(nil), b...)
		if len(c) > 0 {
			c[bit/8%len(c)] ^= 1 << (bit % 8)
		}
		return c
	}
	ri, si := new(big.Int).SetBytes(r), new(big.Int).SetBytes(s)
	one := big.NewInt(1)
	ms := []mutation{
		{"r bit 0 flipped", digest, flip(r, 0), s},
		{"r top bit flipped", digest, flip(r, 8*size-1), s},
		{"s bit 0 flipped", digest, r, flip(s, 0)},
		{"s bit 100 flipped", digest, r, flip(s, 100)},
		{"digest bit flipped", flip(digest, 3), r, s},
		{"digest empty", nil, r, s},
		{"r and s swapped", digest, s, r},
		{"s = n - s", digest, r, pad(new(big.Int).Sub(n, si), size)},
		{"r = n - r", digest, pad(new(big.Int).Sub(n, ri), size), s},
		{"r + n", digest, pad(new(big.Int).Add(ri, n), size), s},
		{"s + n", digest, r, pad(new(big.Int).Add(si, n), size)},
		{"r = 0", digest, make([]byte, size), s},
		{"s = 0", digest, r, make([]byte, size)},
		{"r = n", digest, pad(n, size), s},
		{"s = n", digest, r, pad(n, size)},
		{"r = n - 1", digest, pad(new(big.Int).Sub(n, one), size), s},
		{"s = 1", digest, r, pad(one, size)},
		{"r all ones", digest, allOnes(size), s},
		{"s all ones", digest, r, allOnes(size)},
	}
	out := ms[:0]
	for _, m := range ms {
		if m.r != nil && m.s != nil { // r + n may not fit in size bytes
			out = append(out, m)
		}
	}
	return out
}

func allOnes(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 0xFF
	}
	return b
}

// TestCrafted builds, with the private key, signatures that reach the
// special cases of R = u₁·G + u₂·Q: u₂·Q = −u₁·G, where R is the point at
// infinity (refused), and u₂·Q = u₁·G, where R = 2·u₁·G is a doubling (a
// valid signature, accepted), and u₁ = 0, where the digest is a multiple of n.
func TestCrafted(t *testing.T) {
	for _, c := range curves {
		t.Run(c.name, func(t *testing.T) {
			priv := private(t, c.key)
			pub := prepared(t, &priv.PublicKey)
			n := c.curve.Params().N
			d := new(big.Int).SetBytes(mustBytes(t, priv))
			// digest is the digest whose leftmost n.BitLen() bits are e.
			digest := func(e *big.Int) []byte {
				return pad(new(big.Int).Lsh(e, uint(8*c.size-n.BitLen())), c.size)
			}
			for i := range 8 {
				// R at infinity: e = −r·d, so u₁ + u₂·d = (e + r·d)/s = 0.
				r := randScalar(t, n)
				s := randScalar(t, n)
				e := new(big.Int).Mul(r, d)
				e.Neg(e).Mod(e, n)
				if check(t, &priv.PublicKey, pub, fmt.Sprintf("infinity %d", i), digest(e), pad(r, c.size), pad(s, c.size)) {
					t.Errorf("infinity %d: R = ∞ verified", i)
				}

				// Doubling: R = k·G, r = x(R) mod n, e = r·d, s = (e + r·d)/k,
				// so u₁ = u₂·d = k/2 and R = (k/2)·G + (k/2)·Q-part, equal points.
				k := randScalar(t, n)
				kp, err := ecdsa.ParseRawPrivateKey(c.curve, pad(k, c.size))
				if err != nil {
					t.Fatal(err)
				}
				kG, err := kp.PublicKey.Bytes() // 0x04 || x || y
				if err != nil {
					t.Fatal(err)
				}
				r = new(big.Int).SetBytes(kG[1 : 1+c.size])
				r.Mod(r, n)
				e = new(big.Int).Mul(r, d)
				e.Mod(e, n)
				s = new(big.Int).Add(e, new(big.Int).Mul(r, d))
				s.Mul(s, new(big.Int).ModInverse(k, n)).Mod(s, n)
				if r.Sign() == 0 || s.Sign() == 0 {
					continue
				}
				if !check(t, &priv.PublicKey, pub, fmt.Sprintf("doubling %d", i), digest(e), pad(r, c.size), pad(s, c.size)) {
					t.Errorf("doubling %d: a valid signature with u₁·G = u₂·Q does not verify", i)
				}

				// u₁ = 0: the digest is n (or 0), R = u₂·Q alone; valid when
				// s = r·d/k for R = k·G.
				s = new(big.Int).Mul(r, d)
				s.Mul(s, new(big.Int).ModInverse(k, n)).Mod(s, n)
				for _, e := range []*big.Int{new(big.Int), n} {
					if !check(t, &priv.PublicKey, pub, fmt.Sprintf("u1 = 0 (e = %d bits) %d", e.BitLen(), i), digest(e), pad(r, c.size), pad(s, c.size)) {
						t.Errorf("u1 = 0 %d: a valid signature does not verify", i)
					}
				}
			}
		})
	}
}

func mustBytes(t *testing.T, priv *ecdsa.PrivateKey) []byte {
	t.Helper()
	b, err := priv.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func randScalar(t *testing.T, n *big.Int) *big.Int {
	t.Helper()
	for {
		k, err := rand.Int(rand.Reader, n)
		if err != nil {
			t.Fatal(err)
		}
		if k.Sign() != 0 {
			return k
		}
	}
}

func TestWrongLengths(t *testing.T) {
	priv := private(t, testkeys.EC256A)
	pub := prepared(t, &priv.PublicKey)
	digest := sha256.Sum256([]byte("m"))
	ri, si, err := ecdsa.Sign(rand.Reader, priv, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	r, s := pad(ri, 32), pad(si, 32)
	if !pub.Verify(digest[:], r, s) {
		t.Fatal("a valid signature does not verify")
	}
	tests := []struct {
		name string
		r, s []byte
	}{
		{"r short", r[1:], s},
		{"s short", r, s[1:]},
		{"r zero-extended", append([]byte{0}, r...), s},
		{"s zero-extended", r, append([]byte{0}, s...)},
		{"both P-384 sized", append(make([]byte, 16), r...), append(make([]byte, 16), s...)},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if pub.Verify(digest[:], tt.r, tt.s) {
				t.Error("Verify() = true for a signature of the wrong length")
			}
		})
	}
}

func TestNewPublicKeyRefuses(t *testing.T) {
	raw, err := private(t, testkeys.EC256A).PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	x, y := new(big.Int).SetBytes(raw[1:33]), new(big.Int).SetBytes(raw[33:])
	tests := []struct {
		name string
		pub  *ecdsa.PublicKey
	}{
		{"nil", nil},
		{"nil curve", &ecdsa.PublicKey{}},
		{"P-224", func() *ecdsa.PublicKey {
			k, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			return &k.PublicKey
		}()},
		{"point off the curve", rawKey(x, new(big.Int).Add(y, big.NewInt(1)))},
		{"coordinate not below p", rawKey(new(big.Int).Add(x, elliptic.P256().Params().P), y)},
		{"the point at infinity", rawKey(new(big.Int), new(big.Int))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if k, err := ecverify.NewPublicKey(tt.pub); err == nil {
				t.Errorf("NewPublicKey() = %v, nil; want an error", k)
			}
		})
	}
}

// rawKey is a P-256 key with the coordinates x and y, valid or not.
func rawKey(x, y *big.Int) *ecdsa.PublicKey {
	//lint:ignore SA1019 invalid keys can only be built from raw coordinates
	return &ecdsa.PublicKey{Curve: elliptic.P256(), X: x, Y: y}
}

// TestConcurrentFirstUse verifies with a fresh key from many goroutines at
// once: the table is built once, and (under -race) without a data race.
func TestConcurrentFirstUse(t *testing.T) {
	for _, c := range curves {
		t.Run(c.name, func(t *testing.T) {
			priv := private(t, c.key)
			pub := prepared(t, &priv.PublicKey)
			digest := sha256.Sum256([]byte(c.name))
			ri, si, err := ecdsa.Sign(rand.Reader, priv, digest[:])
			if err != nil {
				t.Fatal(err)
			}
			r, s := pad(ri, c.size), pad(si, c.size)
			var wg sync.WaitGroup
			results := make([]bool, 8)
			for i := range results {
				wg.Go(func() { results[i] = pub.Verify(digest[:], r, s) })
			}
			wg.Wait()
			for i, ok := range results {
				if !ok {
					t.Errorf("goroutine %d: a valid signature does not verify", i)
				}
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	privs := make([]*ecdsa.PrivateKey, len(curves))
	pubs := make([]*ecverify.PublicKey, len(curves))
	for i, c := range curves {
		privs[i] = private(f, c.key)
		pubs[i] = prepared(f, &privs[i].PublicKey)
		digest := sha256.Sum256([]byte("m"))
		ri, si, err := ecdsa.Sign(rand.Reader, privs[i], digest[:])
		if err != nil {
			f.Fatal(err)
		}
		r, s := pad(ri, c.size), pad(si, c.size)
		f.Add(uint8(i), digest[:], r, s)
		f.Add(uint8(i), digest[:], r, pad(new(big.Int).Sub(c.curve.Params().N, si), c.size))
		f.Add(uint8(i), digest[:1], r, s)
		f.Add(uint8(i), []byte{}, make([]byte, c.size), s)
	}
	f.Fuzz(func(t *testing.T, ki uint8, digest, r, s []byte) {
		i := int(ki) % len(curves)
		ours := pubs[i].Verify(digest, r, s)
		// crypto/ecdsa takes integers of any length; the JWS form fixes it.
		theirs := len(r) == curves[i].size && len(s) == curves[i].size && stdlib(&privs[i].PublicKey, digest, r, s)
		if ours != theirs {
			t.Fatalf("%s: ecverify = %v, crypto/ecdsa = %v", curves[i].name, ours, theirs)
		}
	})
}

// BenchmarkVerify compares a verify with a prepared key (its table built)
// against crypto/ecdsa.VerifyASN1 on the same signature.
func BenchmarkVerify(b *testing.B) {
	for _, c := range curves {
		priv := private(b, c.key)
		pub := prepared(b, &priv.PublicKey)
		digest := sha256.Sum256([]byte("m"))
		ri, si, err := ecdsa.Sign(rand.Reader, priv, digest[:])
		if err != nil {
			b.Fatal(err)
		}
		r, s := pad(ri, c.size), pad(si, c.size)
		der, err := ecdsa.SignASN1(rand.Reader, priv, digest[:])
		if err != nil {
			b.Fatal(err)
		}
		b.Run("curve="+c.name+"/impl=crypto-ecdsa", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !ecdsa.VerifyASN1(&priv.PublicKey, digest[:], der) {
					b.Fatal("does not verify")
				}
			}
		})
		b.Run("curve="+c.name+"/impl=ecverify", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !pub.Verify(digest[:], r, s) {
					b.Fatal("does not verify")
				}
			}
		})
	}
}

// BenchmarkFirstUse is the one-time cost of a key's table, paid by its first
// verification, and its memory (B/op).
func BenchmarkFirstUse(b *testing.B) {
	for _, c := range curves {
		priv := private(b, c.key)
		digest := sha256.Sum256([]byte("m"))
		ri, si, err := ecdsa.Sign(rand.Reader, priv, digest[:])
		if err != nil {
			b.Fatal(err)
		}
		r, s := pad(ri, c.size), pad(si, c.size)
		b.Run("curve="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !prepared(b, &priv.PublicKey).Verify(digest[:], r, s) {
					b.Fatal("does not verify")
				}
			}
		})
	}
}

func TestZeroPublicKey(t *testing.T) {
	var zero ecverify.PublicKey
	var nilKey *ecverify.PublicKey
	for name, k := range map[string]*ecverify.PublicKey{"zero": &zero, "nil": nilKey} {
		t.Run(name, func(t *testing.T) {
			if k.Verify(nil, nil, nil) {
				t.Error("Verify() = true on a key NewPublicKey did not build")
			}
		})
	}
}
