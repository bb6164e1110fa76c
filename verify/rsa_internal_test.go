package verify

import (
	"bytes"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestVerifyRSAgreesWithGolangJWT checks the RS* and PS* verifiers — the
// prepared one (verifyRSPrepared), the standard one (crypto/rsa), and the
// verifier's whole signature step over the prepared seam with every accept
// cross-checked — against golang-jwt's signing method, on valid and
// tampered signatures.
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
			key, err := cache.NewKey(pub, cache.KeyMeta{})
			if err != nil {
				t.Fatalf("NewKey() = %v", err)
			}
			p := mustPrepare(t, key)
			step := testSigner(t, Options{CrossCheckRate: 1}, preparedSeam())
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
				prepared := verifyRSPrepared(p.rsa, spec.rs, c.signing, c.sig)
				standard := verifyStandard(spec, c.signing, c.sig, key)
				whole := step.verify(&issuer{}, spec, c.signing, c.sig, key)
				jwtOK := spec.method.Verify(c.signing, c.sig, pub) == nil
				if prepared != c.want || standard != c.want || whole != c.want || jwtOK != c.want {
					t.Errorf("%s: prepared = %v, standard = %v, signature step = %v, golang-jwt = %v, want %v", c.name, prepared, standard, whole, jwtOK, c.want)
				}
			}
			if st := step.cross.st; st.mismatches.Load() != 0 || st.checks.Load() != 1 {
				t.Errorf("cross-check: %d checks, %d mismatches, want 1 (the valid signature) and 0", st.checks.Load(), st.mismatches.Load())
			}
		})
	}
}
