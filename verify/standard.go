package verify

import (
	"crypto/ed25519"

	"github.com/jwksverify/jwksverify/cache"
)

// StandardSignature reports whether sig is a valid signature of signing
// with the asymmetric algorithm alg under key, checked by the standard
// library alone: crypto/rsa for RS* and PS*, crypto/ecdsa for ES* (the
// DER signature built from the JWS form without allocating, as verifyES
// says), crypto/ed25519 for EdDSA, each with a one-shot hash. It prepares
// nothing and keeps nothing of key, so it suits keys seen once (a DPoP
// proof's jwk); a Verifier's keys get the prepared verifiers instead. It is
// false for an HMAC or unknown alg, and for a key of another type; it does
// not check that key fits alg beyond its type ([KeyFits] does). It is safe
// for concurrent use and does not allocate for ES* and EdDSA.
func StandardSignature(alg string, key *cache.Key, signing string, sig []byte) bool {
	a := lookupAlg(alg)
	if a == nil || key == nil {
		return false
	}
	if a.rs != nil || a.es != nil {
		return verifyStandard(a, signing, sig, key)
	}
	if a.kty != "OKP" {
		return false // HS*: a MAC is never a public-key signature
	}
	pub, ok := key.Public.(ed25519.PublicKey)
	return ok && len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, readOnlyBytes(signing), sig)
}
