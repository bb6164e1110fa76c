package verify

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/jwksverify/jwksverify/cache"
)

// KeyFits reports whether key may verify a token signed with alg, by the
// rule the [Verifier] applies to every key it finds (RFC 8725 §3.1): alg is
// one of the supported algorithms (exact case; never "none"), the key's kty
// and curve fit it, a symmetric (oct) key came from local configuration, and
// the JWK's alg, use and key_ops, when present, allow it. It returns nil, or
// an error wrapping [ErrAlgNotAllowed] that says why. A nil key fits nothing.
//
// It is for code that hands keys of a [cache.Set] to another verifier (the
// golang-jwt adapter of package jwks), so that the rule has one home. It is
// safe for concurrent use and does not allocate when the key fits.
func KeyFits(key *cache.Key, alg string) error {
	spec := lookupAlg(alg)
	if spec == nil {
		return fmt.Errorf("%w: %s is not a supported algorithm", ErrAlgNotAllowed, quote(alg))
	}
	if key == nil {
		return fmt.Errorf("%w: no key", ErrAlgNotAllowed)
	}
	if why := spec.fits(key); why != "" {
		return fmt.Errorf("%w: kid %s: %s", ErrAlgNotAllowed, quote(key.Kid), why)
	}
	return nil
}

// CheckHMACKey reports whether the symmetric (oct) key k may be an HMAC
// secret: long enough for the HMAC algorithm it may serve (its JWK alg, or
// without one the shortest, HS256: its hash size, [MinHMACBytes]; RFC 7518
// §3.2), and not public key material (a PEM block, a DER or base64 DER
// public key or certificate, a JWK or JWKS: RFC 8725 §2.1, anyone who has
// the public key could sign with such a "secret"). Key sources call it so
// that such a secret is refused where it is read (package jwks skips it
// and lists it, jwks.New refuses it as a static key), not only when a
// token names it. It returns nil for a key of another type, and otherwise
// an error wrapping [ErrAlgNotAllowed] that never quotes the secret.
func CheckHMACKey(k *cache.Key) error {
	if k == nil || k.Kty != "oct" {
		return nil
	}
	alg := k.Alg
	if alg == "" {
		alg = "HS256" // the shortest secret an HMAC algorithm takes
	}
	if err := KeyFits(k, alg); err != nil {
		return err
	}
	if secret, ok := k.Public.([]byte); ok {
		if what := publicKeyMaterial(secret); what != "" {
			return fmt.Errorf("%w: kid %s: the HMAC secret is %s: public key material is never an HMAC secret (RFC 8725 §2.1)", ErrAlgNotAllowed, quote(k.Kid), what)
		}
	}
	return nil
}

// publicKeyMaterial says what public key material secret is ("a PEM
// block", …), or "" when it is none that the standard library can read.
func publicKeyMaterial(secret []byte) string {
	if bytes.Contains(secret, []byte("-----BEGIN ")) {
		return "a PEM block"
	}
	if isDERKey(secret) {
		return "a DER public key or certificate"
	}
	trimmed := bytes.TrimSpace(secret)
	if der, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(trimmed), nil))); err == nil && isDERKey(der) {
		return "a base64 DER public key or certificate"
	}
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var doc map[string]json.RawMessage
		if json.Unmarshal(trimmed, &doc) == nil {
			if _, ok := doc["kty"]; ok {
				return "a JWK"
			}
			if _, ok := doc["keys"]; ok {
				return "a JWKS"
			}
		}
	}
	return ""
}

// isDERKey reports whether der is a DER public key (PKIX or PKCS #1) or
// certificate.
func isDERKey(der []byte) bool {
	if _, err := x509.ParsePKIXPublicKey(der); err == nil {
		return true
	}
	if _, err := x509.ParsePKCS1PublicKey(der); err == nil {
		return true
	}
	_, err := x509.ParseCertificate(der)
	return err == nil
}

// KeyIssuerFits applies key's per-key issuer member (Microsoft Entra) to a
// token of issuer iss and tenant tid, by the verifier's rule: nil when the
// key has none or iss matches it, else an error wrapping [ErrWrongIssuer].
func KeyIssuerFits(key *cache.Key, iss, tid string) error {
	if key == nil || keyIssuerMatches(key.Issuer, iss, tid) {
		return nil
	}
	return fmt.Errorf("%w: kid %s belongs to issuer %s, token iss %s", ErrWrongIssuer, quote(key.Kid), quote(key.Issuer), quote(iss))
}
