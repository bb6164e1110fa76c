package rsaverify_test

import (
	"crypto"
	"crypto/fips140"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify/internal/rsaverify"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// keyNames are the RSA test keys: every size the verifier meets, the odd bit
// length that shortens the PSS encoding, and 1024 bits, the smallest that
// crypto/rsa (and so rsaverify) verifies with.
var keyNames = []string{testkeys.RSA1024, testkeys.RSA2048A, oddKey, testkeys.RSA3072, testkeys.RSA4096}

// oddKey is a 2049-bit key: its modulus is one bit into a byte, so the PSS
// encoding is one byte shorter than the modulus and the modulus's 33 limbs
// hold 264 bytes, 7 more than a signature's 257.
const oddKey = testkeys.RSA2049

func private(t testing.TB, name string) *rsa.PrivateKey {
	t.Helper()
	k, ok := testkeys.Private(name).(*rsa.PrivateKey)
	if !ok {
		t.Fatalf("testkeys.Private(%q) is %T, want *rsa.PrivateKey", name, testkeys.Private(name))
	}
	return k
}

func prepared(t testing.TB, pub *rsa.PublicKey) *rsaverify.PublicKey {
	t.Helper()
	k, err := rsaverify.NewPublicKey(pub)
	if err != nil {
		t.Fatalf("NewPublicKey() = %v", err)
	}
	return k
}

func digest(h crypto.Hash, msg []byte) []byte {
	switch h {
	case crypto.SHA256:
		s := sha256.Sum256(msg)
		return s[:]
	case crypto.SHA384:
		s := sha512.Sum384(msg)
		return s[:]
	case crypto.SHA512:
		s := sha512.Sum512(msg)
		return s[:]
	}
	panic("unsupported hash")
}

var hashes = []crypto.Hash{crypto.SHA256, crypto.SHA384, crypto.SHA512}

// scheme is one signature scheme, verified both ways.
type scheme struct {
	name   string
	ours   func(k *rsaverify.PublicKey, h crypto.Hash, d, sig []byte) error
	stdlib func(k *rsa.PublicKey, h crypto.Hash, d, sig []byte) error
}

var schemes = []scheme{
	{
		name:   "pkcs1v15",
		ours:   (*rsaverify.PublicKey).VerifyPKCS1v15,
		stdlib: rsa.VerifyPKCS1v15,
	},
	{
		name: "pss",
		ours: (*rsaverify.PublicKey).VerifyPSS,
		stdlib: func(k *rsa.PublicKey, h crypto.Hash, d, sig []byte) error {
			return rsa.VerifyPSS(k, h, d, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthAuto})
		},
	},
}

// sign makes a valid signature under scheme name; salt is the PSS salt
// length (ignored for PKCS #1 v1.5).
func sign(t testing.TB, priv *rsa.PrivateKey, name string, h crypto.Hash, d []byte, salt int) []byte {
	t.Helper()
	var sig []byte
	var err error
	if name == "pkcs1v15" {
		sig, err = rsa.SignPKCS1v15(rand.Reader, priv, h, d)
	} else {
		sig, err = rsa.SignPSS(rand.Reader, priv, h, d, &rsa.PSSOptions{SaltLength: salt, Hash: h})
	}
	if err != nil {
		t.Fatalf("sign %s %v: %v", name, h, err)
	}
	return sig
}

// mutations derives signatures from a valid one that must all fail: bit
// flips in every region, wrong lengths, and values at or above N.
func mutations(sig []byte, n *big.Int) map[string][]byte {
	flip := func(i int, bit byte) []byte {
		s := append([]byte(nil), sig...)
		s[i] ^= bit
		return s
	}
	size := len(sig)
	plusN := new(big.Int).Add(new(big.Int).SetBytes(sig), n)
	m := map[string][]byte{
		"flip-first-byte":  flip(0, 0x01),
		"flip-middle-byte": flip(size/2, 0x80),
		"flip-last-byte":   flip(size-1, 0x01),
		"truncated":        sig[:size-1],
		"zero-prefixed":    append([]byte{0}, sig...),
		"empty":            nil,
		"all-zero":         make([]byte, size),
		"one":              new(big.Int).SetInt64(1).FillBytes(make([]byte, size)),
		"n-minus-one":      new(big.Int).Sub(n, big.NewInt(1)).FillBytes(make([]byte, size)),
		"n":                n.FillBytes(make([]byte, size)),
		"all-ff":           bytesOf(0xff, size),
	}
	if plusN.BitLen() <= 8*size {
		m["sig-plus-n"] = plusN.FillBytes(make([]byte, size))
	}
	return m
}

func bytesOf(b byte, n int) []byte {
	s := make([]byte, n)
	for i := range s {
		s[i] = b
	}
	return s
}

// TestVerifyAgreesWithCryptoRSA signs with crypto/rsa and checks, for every
// key size, hash and scheme, that a valid signature verifies and that every
// mutation of it fails — in both packages alike.
func TestVerifyAgreesWithCryptoRSA(t *testing.T) {
	msg := []byte("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9")
	for _, name := range keyNames {
		priv := private(t, name)
		pub := prepared(t, &priv.PublicKey)
		for _, h := range hashes {
			d := digest(h, msg)
			for _, sc := range schemes {
				salts := []int{0}
				if sc.name == "pss" {
					salts = []int{0, 1, rsa.PSSSaltLengthAuto}
					if (priv.N.BitLen()-1+7)/8-2-h.Size() >= h.Size() { // the salt fits (not SHA-512 with 1024 bits)
						salts = append(salts, rsa.PSSSaltLengthEqualsHash)
					}
				}
				for _, salt := range salts {
					t.Run(fmt.Sprintf("%s/%v/%s/salt=%d", name, h, sc.name, salt), func(t *testing.T) {
						sig := sign(t, priv, sc.name, h, d, salt)
						if err := sc.ours(pub, h, d, sig); err != nil {
							t.Fatalf("valid signature: Verify() = %v, want nil", err)
						}
						if err := sc.stdlib(&priv.PublicKey, h, d, sig); err != nil {
							t.Fatalf("valid signature: crypto/rsa = %v, want nil", err)
						}
						for mname, bad := range mutations(sig, priv.N) {
							err := sc.ours(pub, h, d, bad)
							if !errors.Is(err, rsaverify.ErrVerification) {
								t.Errorf("%s: Verify() = %v, want ErrVerification", mname, err)
							}
							if sc.stdlib(&priv.PublicKey, h, d, bad) == nil {
								t.Errorf("%s: crypto/rsa accepts it; the mutation is wrong", mname)
							}
						}
						otherMsg := digest(h, []byte("another message"))
						if err := sc.ours(pub, h, otherMsg, sig); !errors.Is(err, rsaverify.ErrVerification) {
							t.Errorf("other message: Verify() = %v, want ErrVerification", err)
						}
						if err := sc.ours(pub, h, d[:len(d)-1], sig); !errors.Is(err, rsaverify.ErrVerification) {
							t.Errorf("short digest: Verify() = %v, want ErrVerification", err)
						}
						for _, wrong := range hashes {
							if wrong == h {
								continue
							}
							if err := sc.ours(pub, wrong, digest(wrong, msg), sig); !errors.Is(err, rsaverify.ErrVerification) {
								t.Errorf("hash %v instead of %v: Verify() = %v, want ErrVerification", wrong, h, err)
							}
						}
					})
				}
			}
		}
	}
}

// TestKeySizes checks that the test keys have the sizes the tests rely on,
// above all that oddKey's modulus is 1 mod 8 bits long.
func TestKeySizes(t *testing.T) {
	want := map[string]int{testkeys.RSA1024: 1024, testkeys.RSA2048A: 2048, oddKey: 2049, testkeys.RSA3072: 3072, testkeys.RSA4096: 4096}
	for _, name := range keyNames {
		t.Run(name, func(t *testing.T) {
			if got := private(t, name).N.BitLen(); got != want[name] {
				t.Fatalf("%s has %d bits, want %d", name, got, want[name])
			}
		})
	}
}

// TestVerifyOtherKey checks that a signature does not verify under another
// key of the same size.
func TestVerifyOtherKey(t *testing.T) {
	a, b := private(t, testkeys.RSA2048A), private(t, testkeys.RSA2048B)
	pubB := prepared(t, &b.PublicKey)
	d := digest(crypto.SHA256, []byte("m"))
	for _, sc := range schemes {
		t.Run(sc.name, func(t *testing.T) {
			sig := sign(t, a, sc.name, crypto.SHA256, d, rsa.PSSSaltLengthEqualsHash)
			if err := sc.ours(pubB, crypto.SHA256, d, sig); !errors.Is(err, rsaverify.ErrVerification) {
				t.Fatalf("Verify() under key B = %v, want ErrVerification", err)
			}
		})
	}
}

// TestUnsupportedHash checks that only SHA-256/384/512 are accepted: JWS uses
// no other hash with RSA.
func TestUnsupportedHash(t *testing.T) {
	priv := private(t, testkeys.RSA2048A)
	pub := prepared(t, &priv.PublicKey)
	for _, h := range []crypto.Hash{crypto.SHA1, crypto.SHA224, crypto.MD5, crypto.Hash(0), crypto.Hash(99)} {
		t.Run(fmt.Sprint(h), func(t *testing.T) {
			sig := make([]byte, pub.Size())
			for _, sc := range schemes {
				if err := sc.ours(pub, h, make([]byte, 20), sig); !errors.Is(err, rsaverify.ErrVerification) {
					t.Errorf("%s: Verify() = %v, want ErrVerification", sc.name, err)
				}
			}
		})
	}
}

// TestNewPublicKey checks that NewPublicKey refuses exactly what crypto/rsa
// refuses to verify with.
func TestNewPublicKey(t *testing.T) {
	good := &private(t, testkeys.RSA2048A).PublicKey
	with := func(n *big.Int, e int) *rsa.PublicKey { return &rsa.PublicKey{N: n, E: e} }
	tests := []struct {
		name    string
		pub     *rsa.PublicKey
		wantErr bool
	}{
		{"good", good, false},
		{"e-3", with(good.N, 3), false},
		{"e-max", with(good.N, 1<<31-1), false},
		{"nil", nil, true},
		{"nil-modulus", with(nil, 65537), true},
		{"zero-modulus", with(new(big.Int), 65537), true},
		{"negative-modulus", with(new(big.Int).Neg(good.N), 65537), true},
		{"even-modulus", with(new(big.Int).Add(good.N, big.NewInt(1)), 65537), true},
		{"1023-bit", with(new(big.Int).Rsh(good.N, 1025).SetBit(new(big.Int).Rsh(good.N, 1025), 0, 1), 65537), true},
		{"512-bit", with(new(big.Int).Rsh(good.N, 1536).SetBit(new(big.Int).Rsh(good.N, 1536), 0, 1), 65537), true},
		{"e-1", with(good.N, 1), true},
		{"e-2", with(good.N, 2), true},
		{"e-even", with(good.N, 65536), true},
		{"e-negative", with(good.N, -65537), true},
		{"e-too-large", with(good.N, 1<<31+1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rsaverify.NewPublicKey(tt.pub)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewPublicKey() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

// TestConcurrentUse verifies with one prepared key from many goroutines
// (run with -race).
func TestConcurrentUse(t *testing.T) {
	priv := private(t, testkeys.RSA2048A)
	pub := prepared(t, &priv.PublicKey)
	d := digest(crypto.SHA256, []byte("m"))
	sig := sign(t, priv, "pkcs1v15", crypto.SHA256, d, 0)
	bad := append([]byte(nil), sig...)
	bad[10] ^= 1
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			for range 20 {
				s, want := sig, error(nil)
				if i%2 == 1 {
					s, want = bad, rsaverify.ErrVerification
				}
				if err := pub.VerifyPKCS1v15(crypto.SHA256, d, s); !errors.Is(err, want) {
					errs <- fmt.Errorf("goroutine %d: Verify() = %v, want %v", i, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// FuzzVerify checks that rsaverify and crypto/rsa agree on arbitrary
// signatures and digests, for both schemes, under a 2048-bit and the
// odd-length 2049-bit key.
func FuzzVerify(f *testing.F) {
	keys := []*rsa.PrivateKey{private(f, testkeys.RSA2048A), private(f, oddKey)}
	pubs := []*rsaverify.PublicKey{prepared(f, &keys[0].PublicKey), prepared(f, &keys[1].PublicKey)}
	d := digest(crypto.SHA256, []byte("m"))
	for ki, k := range keys {
		for si, sc := range schemes {
			sig := sign(f, k, sc.name, crypto.SHA256, d, rsa.PSSSaltLengthEqualsHash)
			f.Add(uint8(ki), uint8(si), uint8(0), d, sig)
			f.Add(uint8(ki), uint8(si), uint8(0), d, sig[1:])
			s2 := append([]byte(nil), sig...)
			s2[len(s2)-1] ^= 1
			f.Add(uint8(ki), uint8(si), uint8(0), d, s2)
		}
	}
	f.Add(uint8(0), uint8(1), uint8(2), make([]byte, 64), make([]byte, 256))
	f.Fuzz(func(t *testing.T, ki, si, hi uint8, dg, sig []byte) {
		k, pub := keys[int(ki)%len(keys)], pubs[int(ki)%len(keys)]
		sc := schemes[int(si)%len(schemes)]
		h := hashes[int(hi)%len(hashes)]
		ours := sc.ours(pub, h, dg, sig)
		theirs := sc.stdlib(&k.PublicKey, h, dg, sig)
		if ours != nil && !errors.Is(ours, rsaverify.ErrVerification) {
			t.Fatalf("Verify() = %v, want nil or ErrVerification", ours)
		}
		if (ours == nil) != (theirs == nil) {
			t.Fatalf("%s %v: rsaverify = %v, crypto/rsa = %v", sc.name, h, ours, theirs)
		}
	})
}

// BenchmarkVerify compares a verify with a prepared key against crypto/rsa's
// (which prepares the key on every call).
func BenchmarkVerify(b *testing.B) {
	cases := []struct {
		name, key, scheme string
	}{
		{"RS256-2048", testkeys.RSA2048A, "pkcs1v15"},
		{"RS256-3072", testkeys.RSA3072, "pkcs1v15"},
		{"RS256-4096", testkeys.RSA4096, "pkcs1v15"},
		{"PS256-2048", testkeys.RSA2048A, "pss"},
	}
	for _, c := range cases {
		priv := private(b, c.key)
		pub := prepared(b, &priv.PublicKey)
		sc := schemes[0]
		if c.scheme == "pss" {
			sc = schemes[1]
		}
		d := digest(crypto.SHA256, []byte("m"))
		sig := sign(b, priv, c.scheme, crypto.SHA256, d, rsa.PSSSaltLengthEqualsHash)
		b.Run("alg="+c.name+"/impl=crypto-rsa", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := sc.stdlib(&priv.PublicKey, crypto.SHA256, d, sig); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("alg="+c.name+"/impl=rsaverify", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := sc.ours(pub, crypto.SHA256, d, sig); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// rawSign returns em^d mod N: a "signature" whose encoded message is em,
// valid or not, so the decoding checks can be reached one at a time.
func rawSign(priv *rsa.PrivateKey, em []byte) []byte {
	s := new(big.Int).Exp(new(big.Int).SetBytes(em), priv.D, priv.N)
	return s.FillBytes(make([]byte, priv.Size()))
}

// rawOpen returns sig^e mod N as Size bytes: the encoded message of sig.
func rawOpen(pub *rsa.PublicKey, sig []byte) []byte {
	m := new(big.Int).Exp(new(big.Int).SetBytes(sig), big.NewInt(int64(pub.E)), pub.N)
	return m.FillBytes(make([]byte, pub.Size()))
}

// TestCraftedEncodings signs encoded messages that break one rule of the
// PKCS #1 v1.5 or PSS encoding each, and checks that rsaverify refuses
// each one exactly when crypto/rsa does (the unbroken controls pass both).
func TestCraftedEncodings(t *testing.T) {
	d := digest(crypto.SHA256, []byte("m"))
	for _, name := range []string{testkeys.RSA2048A, oddKey} {
		priv := private(t, name)
		pub := prepared(t, &priv.PublicKey)
		k := priv.Size()
		type crafted struct {
			name   string
			em     []byte
			scheme int // index into schemes
			valid  bool
		}
		var cases []crafted

		// PKCS #1 v1.5: 0x00 0x01 PS(0xff…) 0x00 DigestInfo(SHA-256) digest.
		prefix := []byte{0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20}
		pkcs := func(edit func(em []byte)) []byte {
			em := bytesOf(0xff, k)
			em[0], em[1] = 0, 1
			em[k-len(prefix)-len(d)-1] = 0
			copy(em[k-len(prefix)-len(d):], prefix)
			copy(em[k-len(d):], d)
			if edit != nil {
				edit(em)
			}
			return em
		}
		cases = append(cases,
			crafted{"pkcs1-control", pkcs(nil), 0, true},
			crafted{"pkcs1-block-type-2", pkcs(func(em []byte) { em[1] = 2 }), 0, false},
			crafted{"pkcs1-leading-nonzero", pkcs(func(em []byte) { em[0] = 0x01 }), 0, false},
			crafted{"pkcs1-zero-in-padding", pkcs(func(em []byte) { em[10] = 0 }), 0, false},
			crafted{"pkcs1-no-separator", pkcs(func(em []byte) { em[k-len(prefix)-len(d)-1] = 0xff }), 0, false},
			crafted{"pkcs1-sha384-oid", pkcs(func(em []byte) { em[k-len(d)-4] = 0x02 }), 0, false},
			crafted{"pkcs1-null-params-missing", pkcs(func(em []byte) { em[k-len(d)-3] = 0x04 }), 0, false},
			crafted{"pkcs1-digest-bit", pkcs(func(em []byte) { em[k-1] ^= 1 }), 0, false},
		)

		// PSS: open a real signature and flip one part of its encoding.
		// Flipping a bit of maskedDB flips the same bit of DB.
		off := 0
		if priv.N.BitLen()%8 == 1 { // EM is one byte shorter than the modulus
			off = 1
		}
		// The salt is random: sign until the crafted encodings that raise
		// EM's leading bits (pss-top-bit, pss-nonzero-extra-byte) are still
		// below N, so that each breaks one rule of the decoding alone.
		below := func(em []byte, edit func(em []byte)) bool {
			e := append([]byte(nil), em...)
			edit(e)
			return new(big.Int).SetBytes(e).Cmp(priv.N) < 0
		}
		var em []byte
		for range 64 {
			em = rawOpen(&priv.PublicKey, sign(t, priv, "pss", crypto.SHA256, d, 32))
			if below(em, func(e []byte) { e[off] ^= 0x80 }) && below(em, func(e []byte) { e[0] = 0x01 }) {
				break
			}
		}
		emLen := k - off
		hLen, sLen := 32, 32
		dbLen := emLen - hLen - 1
		psLen := dbLen - sLen - 1
		pss := func(edit func(em []byte)) []byte {
			e := append([]byte(nil), em...)
			if edit != nil {
				edit(e[off:])
			}
			return e
		}
		cases = append(cases,
			crafted{"pss-control", pss(nil), 1, true},
			crafted{"pss-trailer", pss(func(e []byte) { e[emLen-1] = 0xbd }), 1, false},
			// With 8·emLen−emBits = 1 (2048 bits) the bit is zero and step 9
			// would clear it again: only step 6 refuses it. With 0 (2049
			// bits), it is DB's first bit, in PS.
			crafted{"pss-top-bit", pss(func(e []byte) { e[0] ^= 0x80 }), 1, false},
			crafted{"pss-padding-nonzero", pss(func(e []byte) { e[psLen-1] ^= 0x04 }), 1, false},
			crafted{"pss-separator-cleared", pss(func(e []byte) { e[psLen] ^= 0x01 }), 1, false},
			crafted{"pss-separator-moved", pss(func(e []byte) { e[psLen] ^= 0x01; e[psLen+1] ^= 0x01 }), 1, false},
			crafted{"pss-salt-bit", pss(func(e []byte) { e[dbLen-1] ^= 0x10 }), 1, false},
			crafted{"pss-hash-bit", pss(func(e []byte) { e[dbLen] ^= 0x01 }), 1, false},
		)
		if off == 1 {
			cases = append(cases, crafted{"pss-nonzero-extra-byte", pss(func([]byte) {}), 1, false})
			cases[len(cases)-1].em[0] = 0x01
		}

		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				if new(big.Int).SetBytes(c.em).Cmp(priv.N) >= 0 {
					t.Fatalf("crafted EM is not below N")
				}
				sig := rawSign(priv, c.em)
				sc := schemes[c.scheme]
				ours := sc.ours(pub, crypto.SHA256, d, sig)
				theirs := sc.stdlib(&priv.PublicKey, crypto.SHA256, d, sig)
				if (ours == nil) != c.valid {
					t.Errorf("Verify() = %v, want valid %v", ours, c.valid)
				}
				if (theirs == nil) != c.valid {
					t.Errorf("crypto/rsa = %v, want valid %v (the crafted case is wrong)", theirs, c.valid)
				}
			})
		}
	}
}

// TestShortDigestEncoded signs a PKCS #1 v1.5 and a PSS encoding of a
// digest one byte short and checks that neither signature verifies that
// short digest: the digest length is checked, not only the encoding
// compared (PKCS #1 v1.5) or rehashed (PSS, whose M' takes any length).
func TestShortDigestEncoded(t *testing.T) {
	priv := private(t, testkeys.RSA2048A)
	pub := prepared(t, &priv.PublicKey)
	k := priv.Size()
	short := digest(crypto.SHA256, []byte("m"))[:31]
	prefix := []byte{0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20}
	em := bytesOf(0xff, k)
	em[0], em[1] = 0, 1
	em[k-len(prefix)-len(short)-1] = 0
	copy(em[k-len(prefix)-len(short):], prefix)
	copy(em[k-len(short):], short)
	salt := bytesOf(0x5a, crypto.SHA256.Size())
	tests := []struct {
		name   string
		sig    []byte
		ours   func(sig []byte) error
		stdlib func(sig []byte) error
	}{
		{"pkcs1v15", rawSign(priv, em),
			func(sig []byte) error { return pub.VerifyPKCS1v15(crypto.SHA256, short, sig) },
			func(sig []byte) error { return rsa.VerifyPKCS1v15(&priv.PublicKey, crypto.SHA256, short, sig) }},
		{"pss", rawSign(priv, encodePSS(priv, crypto.SHA256, short, salt, nil, nil)),
			func(sig []byte) error { return pub.VerifyPSS(crypto.SHA256, short, sig) },
			func(sig []byte) error { return rsa.VerifyPSS(&priv.PublicKey, crypto.SHA256, short, sig, nil) }},
		{"pss-salt-hash", rawSign(priv, encodePSS(priv, crypto.SHA256, short, salt, nil, nil)),
			func(sig []byte) error { return pub.VerifyPSSSaltHash(crypto.SHA256, short, sig) },
			func(sig []byte) error {
				return rsa.VerifyPSS(&priv.PublicKey, crypto.SHA256, short, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.ours(tt.sig); !errors.Is(err, rsaverify.ErrVerification) {
				t.Errorf("verify(31-byte digest) = %v, want ErrVerification", err)
			}
			if tt.stdlib(tt.sig) == nil {
				t.Errorf("crypto/rsa accepts it; the test is wrong")
			}
		})
	}
}

// TestEnabled checks that the package steps aside in FIPS 140-3 mode and in
// BoringCrypto builds, where crypto/rsa must or does better do the work.
func TestEnabled(t *testing.T) {
	want := !fips140.Enabled() && !boringBuild
	if got := rsaverify.Enabled(); got != want {
		t.Fatalf("Enabled() = %v, want %v (fips140 %v, boringcrypto build %v)", got, want, fips140.Enabled(), boringBuild)
	}
}

// TestVerifyPSSSaltHashAgreesWithCryptoRSA: with the salt fixed to the
// hash's length (RFC 7518 §3.5), VerifyPSSSaltHash accepts exactly what
// crypto/rsa.VerifyPSS with PSSSaltLengthEqualsHash accepts, for salts of
// every nearby length.
func TestVerifyPSSSaltHashAgreesWithCryptoRSA(t *testing.T) {
	msg := []byte("eyJhbGciOiJQUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9")
	for _, name := range keyNames {
		priv := private(t, name)
		pub := prepared(t, &priv.PublicKey)
		for _, h := range hashes {
			d := digest(h, msg)
			maxSalt := (priv.N.BitLen()-1+7)/8 - 2 - h.Size()
			for _, salt := range []int{0, 1, h.Size() - 1, h.Size(), h.Size() + 1, rsa.PSSSaltLengthAuto} {
				if salt > maxSalt {
					continue
				}
				t.Run(fmt.Sprintf("%s/%v/salt=%d", name, h, salt), func(t *testing.T) {
					sig := sign(t, priv, "pss", h, d, salt)
					want := rsa.VerifyPSS(&priv.PublicKey, h, d, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
					got := pub.VerifyPSSSaltHash(h, d, sig) == nil
					if got != want {
						t.Fatalf("VerifyPSSSaltHash() ok = %v, crypto/rsa ok = %v", got, want)
					}
					if salt == h.Size() && !got {
						t.Fatal("a salt of the hash's length is refused")
					}
				})
			}
		}
	}
}
