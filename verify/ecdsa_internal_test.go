package verify

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"math/big"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// asn1Sig is the ECDSA-Sig-Value as encoding/asn1 marshals it.
func asn1Sig(t testing.TB, r, s []byte) []byte {
	t.Helper()
	der, err := asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(r), new(big.Int).SetBytes(s)})
	if err != nil {
		t.Fatalf("asn1.Marshal() = %v", err)
	}
	return der
}

func TestAppendDERSigMatchesEncodingASN1(t *testing.T) {
	rep := func(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		r, s []byte
	}{
		{"one-byte", []byte{1}, []byte{2}},
		{"high-bit-padded", []byte{0x80}, []byte{0xFF}},
		{"leading-zeros-trimmed", []byte{0, 0, 0x7F}, []byte{0, 0x01, 0x00}},
		{"leading-zero-before-high-bit", []byte{0, 0x80, 1}, []byte{0, 0, 0xC0}},
		{"p256-size", rep(0x11, 32), rep(0xEE, 32)},
		{"p384-size", rep(0x7F, 48), rep(0x80, 48)},
		{"p521-size-long-form", cat([]byte{1}, rep(0xAB, 65)), cat([]byte{1}, rep(0xCD, 65))},
		{"p521-top-byte-zero", cat([]byte{0}, rep(0xFF, 65)), cat([]byte{0, 0}, rep(0x01, 64))},
		{"body-exactly-127", rep(0x01, 61), rep(0x01, 62)},
		{"body-exactly-128", rep(0x01, 62), rep(0x01, 62)},
		{"two-byte-length", rep(0x42, 200), rep(0x99, 100)},
		{"long-integer", rep(0xFF, 300), []byte{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := appendDERSig(nil, tt.r, tt.s)
			if want := asn1Sig(t, tt.r, tt.s); !ok || !bytes.Equal(got, want) {
				t.Errorf("appendDERSig() = %x, %v, want %x, true", got, ok, want)
			}
		})
	}
}

func TestAppendDERSigRejectsZero(t *testing.T) {
	tests := []struct {
		name string
		r, s []byte
	}{
		{"r-zero", make([]byte, 32), []byte{1}},
		{"s-zero", []byte{1}, make([]byte, 32)},
		{"both-empty", nil, nil},
		{"r-empty", nil, []byte{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("prefix")
			got, ok := appendDERSig(dst, tt.r, tt.s)
			if ok || string(got) != "prefix" {
				t.Errorf("appendDERSig() = %x, %v, want the prefix unchanged, false", got, ok)
			}
		})
	}
}

// TestAppendDERSigMatchesCryptobyte compares with crypto/ecdsa's own
// encoding (a cryptobyte.Builder in encodeSignature): SignASN1's output,
// decoded to r and s and encoded again, must come back byte for byte.
func TestAppendDERSigMatchesCryptobyte(t *testing.T) {
	for _, name := range []string{testkeys.EC256A, testkeys.EC384, testkeys.EC521} {
		t.Run(name, func(t *testing.T) {
			priv := testkeys.Private(name).(*ecdsa.PrivateKey)
			size := (priv.Curve.Params().BitSize + 7) / 8
			for i := range 64 {
				h := sha256.Sum256([]byte{byte(i)})
				want, err := ecdsa.SignASN1(rand.Reader, priv, h[:])
				if err != nil {
					t.Fatal(err)
				}
				var rs struct{ R, S *big.Int }
				if _, err := asn1.Unmarshal(want, &rs); err != nil {
					t.Fatal(err)
				}
				raw := make([]byte, 2*size)
				rs.R.FillBytes(raw[:size])
				rs.S.FillBytes(raw[size:])
				got, ok := appendDERSig(nil, raw[:size], raw[size:])
				if !ok || !bytes.Equal(got, want) {
					t.Fatalf("appendDERSig() = %x, %v, want %x (SignASN1)", got, ok, want)
				}
			}
		})
	}
}

func TestAppendDERSigDoesNotAllocate(t *testing.T) {
	r, s := bytes.Repeat([]byte{0xAB}, 66), bytes.Repeat([]byte{0xCD}, 66)
	var buf [maxDERSig]byte
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := appendDERSig(buf[:0], r, s); !ok {
			t.Fatal("appendDERSig() = false")
		}
	})
	if allocs != 0 {
		t.Errorf("appendDERSig() allocates %v times, want 0", allocs)
	}
	if got, _ := appendDERSig(nil, r, s); len(got) != maxDERSig {
		t.Errorf("len(appendDERSig(ES512 worst case)) = %d, want maxDERSig %d", len(got), maxDERSig)
	}
}

func FuzzAppendDERSig(f *testing.F) {
	f.Add([]byte{1}, []byte{0x80})
	f.Add([]byte{0, 0, 0}, []byte{1})
	f.Add(bytes.Repeat([]byte{0xFF}, 66), bytes.Repeat([]byte{0x01}, 66))
	f.Add(bytes.Repeat([]byte{0x01}, 200), []byte{0})
	f.Fuzz(func(t *testing.T, r, s []byte) {
		got, ok := appendDERSig(nil, r, s)
		zero := new(big.Int).SetBytes(r).Sign() == 0 || new(big.Int).SetBytes(s).Sign() == 0
		if zero {
			if ok || len(got) != 0 {
				t.Fatalf("appendDERSig(zero) = %x, %v, want nothing, false", got, ok)
			}
			return
		}
		if want := asn1Sig(t, r, s); !ok || !bytes.Equal(got, want) {
			t.Fatalf("appendDERSig() = %x, %v, want %x, true", got, ok, want)
		}
	})
}

// TestVerifyESAgreesWithGolangJWT: every ES token golang-jwt mints verifies,
// and every tampered signature fails, with verifyESPrepared, verifyES
// (crypto/ecdsa) and the verifier's whole signature step over the prepared
// seam (every accept cross-checked) exactly as with golang-jwt's
// SigningMethodECDSA.Verify (the step they replace), and a high-s signature
// (n - s, as valid as s in ECDSA) is accepted by all four.
func TestVerifyESAgreesWithGolangJWT(t *testing.T) {
	for _, alg := range []string{"ES256", "ES384", "ES512"} {
		t.Run(alg, func(t *testing.T) {
			spec := lookupAlg(alg)
			priv := testkeys.SigningKey(alg).(*ecdsa.PrivateKey)
			pub := &priv.PublicKey
			key, err := cache.NewKey(pub, cache.KeyMeta{})
			if err != nil {
				t.Fatalf("NewKey() = %v", err)
			}
			p := mustPrepare(t, key)
			step := testSigner(t, Options{CrossCheckRate: 1}, preparedSeam())
			n := priv.Curve.Params().N
			size := spec.es.size
			// fill is v in size bytes, or nil (a case to skip) when v does not fit.
			fill := func(v *big.Int) []byte {
				if v.BitLen() > 8*size {
					return nil
				}
				return v.FillBytes(make([]byte, size))
			}
			// pair joins r and s, or is nil when either is.
			pair := func(r, s []byte) []byte {
				if r == nil || s == nil {
					return nil
				}
				return append(bytes.Clone(r), s...)
			}
			for i := range 8 {
				tok := testkeys.Mint(alg, priv, map[string]any{"kid": "k"}, map[string]any{"i": i, "sub": strings.Repeat("x", i*40)})
				dot := strings.LastIndexByte(tok, '.')
				signing := tok[:dot]
				sig, err := jwt.NewParser().DecodeSegment(tok[dot+1:])
				if err != nil {
					t.Fatal(err)
				}
				r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
				flipped := bytes.Clone(sig)
				flipped[i%len(sig)] ^= 0x01
				tampered := []struct {
					name string
					sig  []byte
					want bool
				}{
					{"valid", sig, true},
					{"high-s", pair(fill(r), fill(new(big.Int).Sub(n, s))), true},
					{"bit-flipped", flipped, false},
					{"one-byte-short", sig[:len(sig)-1], false},
					{"one-byte-long", append(bytes.Clone(sig), 0), false},
					{"empty", nil, false},
					{"der-instead-of-raw", asn1Sig(t, sig[:size], sig[size:]), false},
					{"r-zero", pair(make([]byte, size), sig[size:]), false},
					{"s-zero", pair(sig[:size], make([]byte, size)), false},
					{"r-is-n", pair(fill(n), sig[size:]), false},
					{"s-is-n", pair(sig[:size], fill(n)), false},
					{"r-plus-n", pair(fill(new(big.Int).Add(r, n)), sig[size:]), false},
					{"s-plus-n", pair(sig[:size], fill(new(big.Int).Add(s, n))), false},
					{"all-ones", bytes.Repeat([]byte{0xFF}, 2*size), false},
				}
				for _, tc := range tampered {
					if tc.sig == nil && tc.name != "empty" {
						continue // r + n or s + n does not fit the fixed width
					}
					prepared := verifyESPrepared(p.ec, spec.es, signing, tc.sig)
					standard := verifyStandard(spec, signing, tc.sig, key)
					whole := step.verify(&issuer{}, spec, signing, tc.sig, key)
					jwtOK := spec.method.Verify(signing, tc.sig, pub) == nil
					if prepared != tc.want || standard != tc.want || whole != tc.want || jwtOK != tc.want {
						t.Errorf("token %d %s: prepared = %v, standard = %v, signature step = %v, golang-jwt = %v, want %v", i, tc.name, prepared, standard, whole, jwtOK, tc.want)
					}
				}
				if verifyESPrepared(p.ec, spec.es, signing+"x", sig) || verifyStandard(spec, signing+"x", sig, key) {
					t.Errorf("token %d: verify(altered signing input) = true, want false", i)
				}
			}
		})
	}
}

// TestVerifyESWrongKey: another curve's key, or another key of the curve,
// never verifies.
func TestVerifyESWrongKey(t *testing.T) {
	tok := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A), nil, map[string]any{"sub": "a"})
	dot := strings.LastIndexByte(tok, '.')
	sig, err := jwt.NewParser().DecodeSegment(tok[dot+1:])
	if err != nil {
		t.Fatal(err)
	}
	spec := lookupAlg("ES256")
	tests := []struct {
		name string
		pub  any
	}{
		{"other-p256-key", testkeys.Public(testkeys.EC256B)},
		{"p384-key", testkeys.Public(testkeys.EC384)},
		{"rsa-key", testkeys.Public(testkeys.RSA2048A)},
		{"nil", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The policy's curve check comes first in the verifier; this is
			// the signature step's own defence, over both paths.
			for _, opts := range []Options{{}, {StandardCrypto: true}} {
				step := testSigner(t, opts, preparedSeam())
				if step.verify(&issuer{}, spec, tok[:dot], sig, &cache.Key{Public: tt.pub}) {
					t.Errorf("StandardCrypto %v: verify(struct literal) = true, want false", opts.StandardCrypto)
				}
				if tt.pub == nil {
					continue
				}
				k, err := cache.NewKey(tt.pub, cache.KeyMeta{})
				if err != nil {
					t.Fatal(err)
				}
				if step.verify(&issuer{}, spec, tok[:dot], sig, k) {
					t.Errorf("StandardCrypto %v: verify(%s %s key) = true, want false", opts.StandardCrypto, k.Kty, k.Crv)
				}
			}
		})
	}
}
