package verify

import (
	"strings"

	"github.com/jwksverify/jwksverify/cache"
)

// SetAttemptHook makes v call f before each signature check, so tests can
// count the keys a token is tried against.
func SetAttemptHook(v *Verifier, f func(*cache.Key)) { v.onAttempt = f }

// SignatureStep is the verifier's signature step alone, for benchmarks.
type SignatureStep struct{ s signer }

// NewSignatureStep returns the signature step of a Verifier built with
// Options{StandardCrypto: standard}: the prepared verifiers (cross-checked at
// the default rate) or crypto/rsa and crypto/ecdsa.
func NewSignatureStep(standard bool) *SignatureStep {
	return &SignatureStep{newSigner(Options{StandardCrypto: standard}, defaultCrypto())}
}

// Verify runs the step for alg.
func (st *SignatureStep) Verify(alg, signing string, sig []byte, key *cache.Key) bool {
	return st.s.verify(&issuer{}, lookupAlg(alg), signing, sig, key)
}

// AlterSignature returns tok with one character in the middle of its
// signature replaced by a different one.
func AlterSignature(tok string) string {
	i := strings.LastIndexByte(tok, '.') + (len(tok)-strings.LastIndexByte(tok, '.'))/2
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

// WithoutCacheMark is a copy of r as an uncached verify would return it:
// the token cache's mark (Result.Cached) cleared, for tests comparing the two.
func WithoutCacheMark(r *Result) *Result {
	c := *r
	c.cached = false
	return &c
}
