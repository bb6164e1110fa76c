package mint

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"

	"github.com/MicahParks/jwkset"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// This file reads a keys file: a private JWKS whose every key is checked
// (a private part consistent with its public part, a supported type and
// algorithm, RSA of at least cache.MinRSABits) and whose public parts are
// published. JWK parsing is jwkset's; the checks and the signatures are the
// standard library's (crypto/ecdsa, crypto/ed25519, crypto/rsa).

// Bounds of a keys file.
const (
	// MaxKeysFileBytes bounds the size of a keys file.
	MaxKeysFileBytes = 1 << 20
	// MaxKeys bounds the keys of a keys file.
	MaxKeys = 100
)

// signingKey is one key of a keys file: its public part as verify sees it,
// and its private part (nil for a key that is only published).
type signingKey struct {
	kid, alg string
	pub      *cache.Key
	priv     crypto.Signer // *ecdsa.PrivateKey, ed25519.PrivateKey, *rsa.PrivateKey; nil: public only
	// noSign: the key's key_ops do not allow "sign" (it may only be
	// published, never be the signing key).
	noSign bool
	// header is the base64url JOSE header of a minted token signed by this
	// key: {"alg","kid","typ":"at+jwt"}.
	header string
}

// keySet is a keys file, checked: its keys in file order, the signing key,
// the public JWKS document, and the file's SHA-256.
type keySet struct {
	keys   []*signingKey
	signer *signingKey
	jwks   []byte
	sum    [sha256.Size]byte
}

// parseKeys checks the keys file data with signingKid as the key that
// signs. Every error wraps ErrKeysFile and names the key.
func parseKeys(data []byte, signingKid string) (*keySet, error) {
	fail := func(format string, args ...any) (*keySet, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrKeysFile}, args...)...)
	}
	if len(data) > MaxKeysFileBytes {
		return fail("larger than %d bytes", MaxKeysFileBytes)
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return fail("not a JWKS document: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF { // More is false before a '}' or ']'
		return fail("not a JWKS document: data after the JSON object")
	}
	switch {
	case len(doc.Keys) == 0:
		return fail(`no key in "keys"`)
	case len(doc.Keys) > MaxKeys:
		return fail("%d keys, at most %d", len(doc.Keys), MaxKeys)
	}
	ks := &keySet{sum: sha256.Sum256(data)}
	seen := make(map[string]bool, len(doc.Keys))
	pub := jwkset.JWKSMarshal{Keys: make([]jwkset.JWKMarshal, 0, len(doc.Keys))}
	for i, raw := range doc.Keys {
		k, pm, err := parseKey(raw)
		if err != nil {
			return fail("keys[%d]: %w", i, err)
		}
		if seen[k.kid] {
			return fail("keys[%d]: kid %q appears twice", i, k.kid)
		}
		seen[k.kid] = true
		ks.keys = append(ks.keys, k)
		pub.Keys = append(pub.Keys, pm)
		if k.kid == signingKid {
			ks.signer = k
		}
	}
	switch {
	case ks.signer == nil:
		return fail("no key has the signing kid %q", signingKid)
	case ks.signer.priv == nil:
		return fail("the signing key %q has no private part (d): it can only be published", signingKid)
	case ks.signer.noSign:
		return fail(`the signing key %q has key_ops without "sign": it can only be published`, signingKid)
	}
	var err error
	if ks.jwks, err = json.Marshal(pub); err != nil {
		return fail("the public JWKS: %w", err)
	}
	if m := leakedMember(ks.jwks); m != "" {
		return fail("the public JWKS would hold %q", m) // never: jwkset marshals public keys only
	}
	ks.jwks = append(ks.jwks, '\n')
	return ks, nil
}

// privateMembers are the JWK members of private key material; none is ever
// published.
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// leakedMember returns the first private member a JWKS document holds in
// one of its keys, or "".
func leakedMember(doc []byte) string {
	var d struct {
		Keys []map[string]json.RawMessage `json:"keys"`
	}
	if json.Unmarshal(doc, &d) != nil {
		return "(unreadable)"
	}
	for _, k := range d.Keys {
		for _, m := range privateMembers {
			if _, ok := k[m]; ok {
				return m
			}
		}
	}
	return ""
}

// parseKey checks one JWK and returns it with its public JWK (kty, crv, x,
// y, n, e, kid, alg, use only).
func parseKey(raw json.RawMessage) (*signingKey, jwkset.JWKMarshal, error) {
	var m jwkset.JWKMarshal
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, m, fmt.Errorf("not a JWK: %w", err)
	}
	if m.KID == "" {
		return nil, m, errors.New(`no "kid": every key needs one (the minted tokens name it)`)
	}
	fail := func(format string, args ...any) (*signingKey, jwkset.JWKMarshal, error) {
		return nil, m, fmt.Errorf("kid %q: "+format, append([]any{m.KID}, args...)...)
	}
	switch m.KTY {
	case jwkset.KtyRSA, jwkset.KtyEC:
	case jwkset.KtyOKP:
		if m.CRV != jwkset.CrvEd25519 {
			return fail("OKP curve %q is not a signing curve jwksverify supports (Ed25519)", m.CRV)
		}
	case jwkset.KtyOct:
		return fail("a symmetric (oct) key cannot be published: mint signs with RSA, EC or Ed25519 keys")
	default:
		return fail("kty %q is not supported (RSA, EC, OKP)", m.KTY)
	}
	if m.USE != "" && m.USE != jwkset.UseSig {
		return fail(`use %q: a minting key has use "sig"`, m.USE)
	}
	if len(m.KEYOPS) > 0 && !slices.Contains(m.KEYOPS, jwkset.KeyOpsSign) && !slices.Contains(m.KEYOPS, jwkset.KeyOpsVerify) {
		return fail(`key_ops %v allow neither "sign" nor "verify"`, m.KEYOPS)
	}
	hasPrivate := m.D != "" || m.P != "" || m.Q != "" || m.DP != "" || m.DQ != "" || m.QI != "" || len(m.OTH) > 0
	j, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{SkipAll: true})
	if err != nil {
		return fail("%w", err)
	}
	k := &signingKey{kid: m.KID, noSign: len(m.KEYOPS) > 0 && !slices.Contains(m.KEYOPS, jwkset.KeyOpsSign)}
	var public crypto.PublicKey
	switch key := j.Key().(type) {
	case *ecdsa.PrivateKey:
		if k.priv, err = checkEC(&key.PublicKey, m.D); err != nil {
			return fail("%w", err)
		}
		public = &key.PublicKey
	case ed25519.PrivateKey:
		if err := checkEd25519(key); err != nil {
			return fail("%w", err)
		}
		k.priv, public = key, key.Public()
	case *rsa.PrivateKey:
		// jwkset validated it against its primes (rsa.PrivateKey.Validate).
		key.Precompute()
		k.priv, public = key, &key.PublicKey
	case *ecdsa.PublicKey, ed25519.PublicKey, *rsa.PublicKey:
		if hasPrivate {
			// An RSA key with d but without all of p, q, dp, dq, qi: jwkset
			// reads it as public; refuse it rather than publish a key whose
			// holder thinks it signs.
			return fail("an incomplete private part: an RSA key needs all of d, p, q, dp, dq, qi")
		}
		public = key
	default:
		return fail("kty %q is not supported (RSA, EC, OKP)", m.KTY)
	}
	alg := string(m.ALG)
	if alg == "" {
		alg = defaultAlg(public)
	}
	// The public part under verify's rules: RSA of at least MinRSABits
	// and no ROCA fingerprint, supported curves; the algorithm fits it.
	if k.pub, err = cache.NewKey(public, cache.KeyMeta{Kid: m.KID, Alg: alg, Use: "sig"}); err != nil {
		return fail("%w", err)
	}
	if err := verify.CheckAlgorithm(alg); err != nil || verify.MinHMACBytes(alg) > 0 {
		return fail("alg %q is not an asymmetric algorithm jwksverify supports", alg)
	}
	if err := verify.KeyFits(k.pub, alg); err != nil {
		return fail("%w", err)
	}
	k.alg = alg
	if k.priv != nil {
		// The private part is consistent with the public part: a signature
		// by it verifies under the public key.
		if err := k.selfTest(); err != nil {
			return fail("%w", err)
		}
	}
	h, _ := json.Marshal(struct { // strings always encode
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{alg, k.kid, TokenType})
	k.header = base64.RawURLEncoding.EncodeToString(h)
	pj, err := jwkset.NewJWKFromKey(public, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{ALG: jwkset.ALG(alg), KID: m.KID, USE: jwkset.UseSig}})
	if err != nil {
		return fail("%w", err)
	}
	return k, pj.Marshal(), nil
}

// checkEC returns the private key of d (the JWK's base64url "d"), made
// by crypto/ecdsa from d alone, and checks that its public point is pub.
func checkEC(pub *ecdsa.PublicKey, d string) (*ecdsa.PrivateKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(d)
	if err != nil {
		return nil, fmt.Errorf(`"d": %w`, err)
	}
	size := (pub.Curve.Params().BitSize + 7) / 8
	if len(raw) > size {
		return nil, errors.New(`"d" is longer than the curve's order`)
	}
	padded := make([]byte, size) // an encoder that dropped leading zeros
	copy(padded[size-len(raw):], raw)
	priv, err := ecdsa.ParseRawPrivateKey(pub.Curve, padded)
	if err != nil {
		return nil, fmt.Errorf(`"d": %w`, err)
	}
	if !priv.PublicKey.Equal(pub) {
		return nil, errors.New(`the private part ("d") does not match the public part ("x", "y")`)
	}
	return priv, nil
}

// checkEd25519 checks that key's public half is the one its seed derives.
func checkEd25519(key ed25519.PrivateKey) error {
	derived := ed25519.NewKeyFromSeed(key.Seed())
	if !bytes.Equal(derived[ed25519.SeedSize:], key[ed25519.SeedSize:]) {
		return errors.New(`the private part ("d") does not match the public part ("x")`)
	}
	return nil
}

// defaultAlg is the algorithm of a key without "alg": the one its curve
// names, RS256 for RSA.
func defaultAlg(pub crypto.PublicKey) string {
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		switch p.Curve {
		case elliptic.P384():
			return "ES384"
		case elliptic.P521():
			return "ES512"
		}
		return "ES256"
	case ed25519.PublicKey:
		return "EdDSA"
	}
	return "RS256"
}

// selfTest signs a fixed message and verifies it with the public part.
func (k *signingKey) selfTest() error {
	msg := []byte("jwksverify mint key check")
	sig, err := k.sign(rand.Reader, msg)
	if err != nil {
		return err
	}
	if !k.verifySig(msg, sig) {
		return errors.New("the private part does not match the public part: its signature does not verify")
	}
	return nil
}

// hashOf returns the hash of alg's family (SHA-256 for *256, ...).
func hashOf(alg string) crypto.Hash {
	switch alg[len(alg)-3:] {
	case "384":
		return crypto.SHA384
	case "512":
		return crypto.SHA512
	}
	return crypto.SHA256
}

// digest returns input's digest under h without a hash.Hash allocation.
func digest(h crypto.Hash, input []byte) []byte {
	switch h {
	case crypto.SHA384:
		s := sha512.Sum384(input)
		return s[:]
	case crypto.SHA512:
		s := sha512.Sum512(input)
		return s[:]
	}
	s := sha256.Sum256(input)
	return s[:]
}

// sign returns the JWS signature of input (RFC 7518 §3): for ECDSA the
// fixed-size r || s, for RSA PKCS #1 v1.5 or PSS, for EdDSA Ed25519. It is
// the standard library's signature, nothing of ours.
func (k *signingKey) sign(rnd io.Reader, input []byte) ([]byte, error) {
	switch priv := k.priv.(type) {
	case ed25519.PrivateKey:
		return ed25519.Sign(priv, input), nil
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rnd, priv, digest(hashOf(k.alg), input))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSign, err)
		}
		size := (priv.Curve.Params().BitSize + 7) / 8
		sig := make([]byte, 2*size)
		r.FillBytes(sig[:size])
		s.FillBytes(sig[size:])
		return sig, nil
	case *rsa.PrivateKey:
		h := hashOf(k.alg)
		var sig []byte
		var err error
		if k.alg[0] == 'P' {
			sig, err = rsa.SignPSS(rnd, priv, h, digest(h, input), &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sig, err = rsa.SignPKCS1v15(rnd, priv, h, digest(h, input))
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSign, err)
		}
		return sig, nil
	}
	return nil, fmt.Errorf("%w: kid %q has no private part", ErrSign, k.kid)
}

// verifySig reports whether sig is a JWS signature of input under the
// public part, with the standard library.
func (k *signingKey) verifySig(input, sig []byte) bool {
	switch pub := k.pub.Public.(type) {
	case ed25519.PublicKey:
		return ed25519.Verify(pub, input, sig)
	case *ecdsa.PublicKey:
		size := (pub.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(pub, digest(hashOf(k.alg), input), r, s)
	case *rsa.PublicKey:
		h := hashOf(k.alg)
		if k.alg[0] == 'P' {
			return rsa.VerifyPSS(pub, h, digest(h, input), sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
		return rsa.VerifyPKCS1v15(pub, h, digest(h, input), sig) == nil
	}
	return false
}
