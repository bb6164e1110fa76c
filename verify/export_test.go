package verify

import "github.com/jwksverify/jwksverify/cache"

// SetAttemptHook makes v call f before each signature check, so tests can
// count the keys a token is tried against.
func SetAttemptHook(v *Verifier, f func(*cache.Key)) { v.onAttempt = f }

// VerifySignature runs the verifier's signature step for alg:
// verifyESPrepared or verifyES for ES*, verifyRS for RS* and PS* with a
// prepared key, golang-jwt's signing method otherwise.
func VerifySignature(alg, signing string, sig []byte, key *cache.Key) bool {
	return lookupAlg(alg).verify(signing, sig, key)
}
