package verify

import (
	"bytes"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/rsaverify"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestVerifyRSAgreesWithGolangJWT checks the RS* and PS* signature step with
// a prepared key (verifyRS) against the same key unprepared (golang-jwt's
// signing method) and golang-jwt itself, on valid and tampered signatures.
func TestVerifyRSAgreesWithGolangJWT(t *testing.T) {
	tests := []struct {
		alg, key string
	}{
		{"RS256", testkeys.RSA2048A},
		{"RS384", testkeys.RSA2048A},
		{"RS512", testkeys.RSA2048A},
		{"RS256", testkeys.RSA3072},
		{"RS256", testkeys.RSA4096},
		{"PS256", testkeys.RSA2048A},
		{"PS384", testkeys.RSA2048A},
		{"PS512", testkeys.RSA2048A},
		{"PS256", testkeys.RSA2049},
		{"PS512", testkeys.RSA3072},
	}
	for _, tt := range tests {
		t.Run(tt.alg+"/"+tt.key, func(t *testing.T) {
			pub := testkeys.Public(tt.key)
			prepared, err := cache.NewKey(pub, cache.KeyMeta{})
			if err != nil {
				t.Fatalf("NewKey() = %v", err)
			}
			if _, ok := prepared.Prepared().(*rsaverify.PublicKey); ok != rsaverify.Enabled() {
				t.Fatalf("Prepared() is %T, want a *rsaverify.PublicKey exactly when rsaverify.Enabled() (%v)", prepared.Prepared(), rsaverify.Enabled())
			}
			plain := &cache.Key{Kty: "RSA", Public: pub}
			spec := lookupAlg(tt.alg)
			tok := testkeys.Mint(tt.alg, testkeys.Private(tt.key), nil, map[string]any{"sub": "a"})
			dot := strings.LastIndexByte(tok, '.')
			signing := tok[:dot]
			sig, err := jwt.NewParser().DecodeSegment(tok[dot+1:])
			if err != nil {
				t.Fatal(err)
			}
			other, _ := jwt.GetSigningMethod(tt.alg).Sign(signing, testkeys.Private(testkeys.RSA2048B))
			flip := func(i int) []byte {
				s := bytes.Clone(sig)
				s[i] ^= 0x01
				return s
			}
			cases := []struct {
				name, signing string
				sig           []byte
				want          bool
			}{
				{"valid", signing, sig, true},
				{"first-byte", signing, flip(0), false},
				{"last-byte", signing, flip(len(sig) - 1), false},
				{"truncated", signing, sig[:len(sig)-1], false},
				{"extended", signing, append(bytes.Clone(sig), 0), false},
				{"empty", signing, nil, false},
				{"other-key", signing, other, false},
				{"altered-input", signing + "x", sig, false},
			}
			for _, c := range cases {
				got := spec.verify(c.signing, c.sig, prepared)
				unprepared := spec.verify(c.signing, c.sig, plain)
				jwtOK := spec.method.Verify(c.signing, c.sig, pub) == nil
				if got != c.want || unprepared != c.want || jwtOK != c.want {
					t.Errorf("%s: verify(prepared) = %v, verify(unprepared) = %v, golang-jwt = %v, want %v", c.name, got, unprepared, jwtOK, c.want)
				}
			}
		})
	}
}
