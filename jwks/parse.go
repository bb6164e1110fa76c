package jwks

import (
	"bytes"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/MicahParks/jwkset"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/verify"
)

// maxJSONDepth bounds the nesting of JWKS and discovery documents. A JWKS
// needs 4 levels ({"keys":[{"x5c":[…]}]}), an RSA "oth" member 5.
const maxJSONDepth = 16

// maxReported bounds the length of a kid, kty or reason copied from a
// document into a [cache.Skipped], a status or a log line.
const maxReported = 128

// maxX5C bounds the certificates of one key's x5c chain, each of which is
// parsed.
const maxX5C = 8

// privateMembers are JWK members that carry private key material of an
// asymmetric key (RFC 7518 §6.2.2, §6.3.2). A published key holding them is
// refused: a verifier needs only the public half, and a JWKS that leaks a
// private key is not to be trusted.
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth"}

// encryptionAlgs are JWE "alg" values (RFC 7518 §4): a key that names one is
// an encryption key, whatever its "use" says.
var encryptionAlgs = []string{
	"RSA1_5", "RSA-OAEP", "RSA-OAEP-256", "RSA-OAEP-384", "RSA-OAEP-512",
	"A128KW", "A192KW", "A256KW", "dir",
	"ECDH-ES", "ECDH-ES+A128KW", "ECDH-ES+A192KW", "ECDH-ES+A256KW",
	"A128GCMKW", "A192GCMKW", "A256GCMKW",
	"PBES2-HS256+A128KW", "PBES2-HS384+A192KW", "PBES2-HS512+A256KW",
}

// ParseOptions configure [Parse].
type ParseOptions struct {
	// Local marks keys as coming from local configuration: oct keys are accepted.
	Local bool
	// MaxKeys bounds the keys read. Zero means DefaultMaxKeys. Keys beyond it
	// are not read; they are reported as one skipped entry.
	MaxKeys int
	// Previous, if not nil, is the set the parsed keys replace: a key whose
	// material and metadata are unchanged is returned as the same *cache.Key
	// pointer, so that caches keyed on it (the verified-token cache) survive
	// a refresh. Nil means every key is new.
	Previous *cache.Set

	// static holds the kids of a fetcher's StaticKeys: a parsed key with one
	// of them is skipped. Nil means none.
	static map[string]struct{}
}

// Parse reads a JWKS document: each key is parsed on its own, and a key that
// is broken, unsupported or refused is skipped and reported, never failing
// the set. It returns an error (wrapping [ErrMalformed]) only when the
// document itself is unusable. An empty or all-skipped set is not an error
// here; a fetch treats it as [ErrNoKeys].
//
// Skipped keys: encryption keys (use "enc" or a JWE alg), keys whose key_ops
// exclude "verify", unknown kty, curves other than P-256/384/521 and Ed25519,
// keys that publish private members, remote oct keys, RSA under 2048 bits or
// with an invalid exponent, and keys whose x5c/x5t does not match. Parse is
// safe for concurrent use and does no I/O (an x5u is never followed).
func Parse(data []byte, opts ParseOptions) ([]*cache.Key, []cache.Skipped, error) {
	keys, skipped, _, err := parse(data, opts)
	return keys, skipped, err
}

// parse is Parse, also returning how many keys lay beyond MaxKeys (not
// read, and reported as one skipped entry).
func parse(data []byte, opts ParseOptions) (_ []*cache.Key, _ []cache.Skipped, extra int, _ error) {
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	raws, extra, err := decodeKeys(data, maxKeys)
	if err != nil {
		return nil, nil, 0, err
	}
	keys := make([]*cache.Key, 0, len(raws))
	var skipped []cache.Skipped
	for i, raw := range raws {
		k, sk := parseKey(i, raw, opts)
		if sk != nil {
			skipped = append(skipped, *sk)
			continue
		}
		if _, taken := opts.static[k.Kid]; taken && k.Kid != "" {
			// A key of local configuration wins: a source must not replace
			// it, nor make it unreachable by kid.
			skipped = append(skipped, cache.Skipped{Index: i, Kid: clip(k.Kid), Kty: k.Kty, Reason: "kid held by a configured static key"})
			continue
		}
		keys = append(keys, reuse(opts.Previous, k))
	}
	if extra > 0 {
		skipped = append(skipped, cache.Skipped{
			Index:  maxKeys,
			Reason: fmt.Sprintf("%s beyond the limit of %d not read", nKeys(extra), maxKeys),
		})
	}
	return keys, skipped, extra, nil
}

// decodeKeys splits {"keys":[…]} into at most maxKeys raw key objects and
// counts the keys beyond. Members other than "keys" are ignored.
func decodeKeys(data []byte, maxKeys int) (raws []json.RawMessage, extra int, err error) {
	if err := checkDepth(data, maxJSONDepth); err != nil {
		return nil, 0, err
	}
	malformed := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
		}
		return fmt.Errorf("%w: %s", ErrMalformed, what)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, 0, malformed("not a JSON object", err)
	}
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, 0, malformed("bad object", err)
		}
		if name, _ := tok.(string); name != "keys" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, 0, malformed("bad object", err)
			}
			continue
		}
		if seen {
			// Two "keys" members are ambiguous; parsers disagree on which wins.
			return nil, 0, malformed(`duplicate "keys" member`, nil)
		}
		seen = true
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil, 0, malformed(`"keys" is not an array`, err)
		}
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, 0, malformed(`bad "keys" array`, err)
			}
			if len(raws) < maxKeys {
				raws = append(raws, raw)
			} else {
				extra++
			}
		}
		if _, err := dec.Token(); err != nil { // ']'
			return nil, 0, malformed(`bad "keys" array`, err)
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, 0, malformed("bad object", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, 0, malformed("data after the top-level object", nil)
	}
	if !seen {
		return nil, 0, malformed(`no "keys" member`, nil)
	}
	return raws, extra, nil
}

// checkDepth refuses JSON nested deeper than maxDepth. It only counts
// brackets outside strings; syntax is left to the decoder.
func checkDepth(data []byte, maxDepth int) error {
	depth := 0
	inString, escaped := false, false
	for _, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("%w: JSON nested deeper than %d levels", ErrMalformed, maxDepth)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// collidingMember reports the first top-level member name of the JSON object
// raw that repeats, comparing names ignoring case as encoding/json (and so
// jwkset's and go-spiffe's decoders) does: Unicode simple folding. raw is known to be an
// object (it unmarshalled into a map).
func collidingMember(raw json.RawMessage) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return "", false
	}
	var seen jsonscan.Names // encoding/json's folding ("uſe" is "use"), not strings.ToLower
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		name, _ := t.(string)
		if !seen.Add(name) {
			return name, true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// parseKey parses the i-th key of a set, or says why it is skipped. The
// checks run in order: the key's JSON, its kid and kty, the metadata
// members, the key type, its purpose, x5c and key_ops, then the material.
func parseKey(i int, raw json.RawMessage, opts ParseOptions) (*cache.Key, *cache.Skipped) {
	members, reason := readMembers(raw)
	if reason != "" {
		return nil, &cache.Skipped{Index: i, Reason: clip(reason)}
	}
	kid, kidOK := stringMember(members, "kid")
	kty, ktyOK := stringMember(members, "kty")
	skip := func(reason string) (*cache.Key, *cache.Skipped) {
		return nil, &cache.Skipped{Index: i, Kid: clip(kid), Kty: clip(kty), Reason: clip(reason)}
	}
	switch {
	case !kidOK:
		return skip(`"kid" is not a string`)
	case !ktyOK || kty == "":
		return skip(`missing or invalid "kty"`)
	}
	meta, reason := readMeta(members, kid, opts.Local)
	if reason != "" {
		return skip(reason)
	}
	if reason := checkKty(kty, members, opts.Local); reason != "" {
		return skip(reason)
	}
	if reason := checkSigning(meta.Use, meta.Alg); reason != "" {
		return skip(reason)
	}
	if reason := checkX5C(members); reason != "" {
		return skip(reason)
	}
	if reason := checkKeyOps(members); reason != "" {
		return skip(reason)
	}
	k, reason := decodeMaterial(raw, kty, meta)
	if reason != "" {
		return skip(reason)
	}
	return k, nil
}

// readMembers decodes raw, one key of a set, into its members, or says why
// it cannot: not a JSON object, or member names that collide.
func readMembers(raw json.RawMessage) (map[string]json.RawMessage, string) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return nil, "not a JSON object"
	}
	if name, dup := collidingMember(raw); dup {
		// The policy checks here read members by exact name, jwkset's
		// decoder matches names ignoring case, and duplicates resolve
		// differently across parsers: a key whose member names collide could
		// pass one reading and be decoded by another. Refuse it.
		return nil, fmt.Sprintf("member %q appears twice (names compared ignoring case)", name)
	}
	return members, ""
}

// readMeta reads the metadata of the key with members and kid: use, alg
// and issuer, each a string when present. It says why not when one is not.
func readMeta(members map[string]json.RawMessage, kid string, local bool) (cache.KeyMeta, string) {
	meta := cache.KeyMeta{Kid: kid, Local: local}
	var ok bool
	if meta.Use, ok = stringMember(members, "use"); !ok {
		return meta, `"use" is not a string`
	}
	if meta.Alg, ok = stringMember(members, "alg"); !ok {
		return meta, `"alg" is not a string`
	}
	if meta.Issuer, ok = stringMember(members, "issuer"); !ok {
		return meta, `"issuer" is not a string`
	}
	return meta, ""
}

// checkKty says why a key of type kty with members is refused ("" if it is
// not): a type other than RSA, EC, OKP (Ed25519 only) and, from a local
// source, oct; or a public key type that publishes private members.
func checkKty(kty string, members map[string]json.RawMessage, local bool) string {
	switch kty {
	case "RSA", "EC", "OKP":
	case "oct":
		if !local {
			return "symmetric (oct) key from a remote JWKS refused"
		}
	default:
		return fmt.Sprintf("unsupported kty %q", clip(kty))
	}
	for _, m := range privateMembers {
		if _, ok := members[m]; ok && kty != "oct" {
			return fmt.Sprintf("private key member %q published; key refused", m)
		}
	}
	if kty == "OKP" {
		if crv, _ := stringMember(members, "crv"); crv != "Ed25519" {
			return fmt.Sprintf("unsupported OKP curve %q", clip(crv))
		}
	}
	return ""
}

// checkSigning says why a key whose use and alg say it is not a signing
// key is refused ("" if they do not).
func checkSigning(use, alg string) string {
	switch {
	case use == "enc":
		return `use "enc": an encryption key, not a signing key`
	case use != "" && use != "sig":
		return fmt.Sprintf("unsupported use %q", clip(use))
	case slices.Contains(encryptionAlgs, alg):
		return fmt.Sprintf("alg %q is an encryption algorithm", alg)
	case strings.EqualFold(alg, "none"):
		return `alg "none" refused`
	}
	return ""
}

// checkX5C says why a key's x5c is refused ("" if absent or accepted): not
// an array, or a chain longer than maxX5C.
func checkX5C(members map[string]json.RawMessage) string {
	x5c, present := members["x5c"]
	if !present {
		return ""
	}
	var chain []json.RawMessage
	if err := json.Unmarshal(x5c, &chain); err != nil {
		return `"x5c" is not an array`
	}
	if len(chain) > maxX5C {
		return fmt.Sprintf("x5c chain of %d certificates (limit %d)", len(chain), maxX5C)
	}
	return ""
}

// checkKeyOps says why a key's key_ops is refused ("" if absent or
// accepted): not an array of strings, or without "verify".
func checkKeyOps(members map[string]json.RawMessage) string {
	ops, present := members["key_ops"]
	if !present {
		return ""
	}
	var list []string
	if err := json.Unmarshal(ops, &list); err != nil {
		return `"key_ops" is not an array of strings`
	}
	if !slices.Contains(list, "verify") {
		return `key_ops does not include "verify"`
	}
	return ""
}

// decodeMaterial decodes the material of raw, a key of type kty, into a key
// with meta (its key_ops as jwkset reads them), or says why it cannot.
//
// jwkset decodes the material and checks it: base64, EC point on its
// curve, x5c certificate against n/e or x/y, x5t and x5t#S256 against
// x5c. x5u is never fetched (GetX5U is nil); its scheme is not checked
// because it is never used. Certificate validity periods are not checked:
// IdPs publish long-expired self-signed certificates for live keys.
func decodeMaterial(raw json.RawMessage, kty string, meta cache.KeyMeta) (*cache.Key, string) {
	j, err := jwkset.NewJWKFromRawJSON(raw,
		jwkset.JWKMarshalOptions{Private: meta.Local && kty == "oct"},
		jwkset.JWKValidateOptions{SkipX5UScheme: true})
	if err != nil {
		return nil, "invalid JWK: " + jwksetReason(err)
	}
	pub := j.Key()
	if r, ok := pub.(*rsa.PublicKey); ok {
		if reason := checkRSA(r); reason != "" {
			return nil, reason
		}
	}
	for _, o := range j.Marshal().KEYOPS {
		meta.KeyOps = append(meta.KeyOps, string(o))
	}
	k, err := cache.NewKey(pub, meta)
	if err != nil {
		return nil, err.Error()
	}
	if err := verify.CheckHMACKey(k); err != nil {
		return nil, err.Error() // a short secret, as the verifier would refuse it
	}
	return k, ""
}

// checkRSA refuses public exponents and moduli crypto/rsa would reject at
// verify time, so that they are reported once instead of failing every token.
func checkRSA(k *rsa.PublicKey) string {
	switch {
	case k.N == nil || k.N.Sign() <= 0 || k.N.Bit(0) == 0:
		return `invalid RSA modulus "n"`
	case k.E < 3 || k.E%2 == 0 || k.E > 1<<31-1:
		return `invalid RSA public exponent "e"`
	}
	return ""
}

// jwksetReason shortens jwkset's errors to the failing check: they nest
// "failed to … JSON Web Key:" prefixes and join sentinels with newlines.
func jwksetReason(err error) string {
	if errors.Is(err, jwkset.ErrX509Mismatch) {
		return "x5c certificate does not match the key"
	}
	msg := err.Error()
	for _, noise := range []string{
		"failed to unmarshal JSON Web Key: ", "failed to validate JSON Web Key: ",
		"failed to marshal JSON Web Key: ", "failed to validate JWK\n", "unable to unmarshal JWK due to invalid attributes\n",
	} {
		msg = strings.ReplaceAll(msg, noise, "")
	}
	return strings.ReplaceAll(msg, "\n", "; ")
}

// stringMember returns members[name] as a string. ok is false when the
// member is present but not a JSON string; an absent member is "", true.
func stringMember(members map[string]json.RawMessage, name string) (s string, ok bool) {
	raw, present := members[name]
	if !present {
		return "", true
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// clip bounds a string copied from a document into reports and logs.
func clip(s string) string {
	if len(s) > maxReported {
		s = s[:maxReported] + "…"
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// reuse returns prev's key equal to k (same material and metadata) if there
// is one, else k.
func reuse(prev *cache.Set, k *cache.Key) *cache.Key {
	if prev == nil {
		return k
	}
	if k.Kid != "" {
		if p, ok := prev.Lookup(k.Kid); ok && sameKey(p, k) {
			return p
		}
		return k
	}
	for _, p := range prev.KidlessKeys() {
		if sameKey(p, k) {
			return p
		}
	}
	return k
}

func sameKey(a, b *cache.Key) bool {
	return a.Thumbprint == b.Thumbprint && a.Kid == b.Kid && a.Kty == b.Kty && a.Crv == b.Crv &&
		a.Size == b.Size && a.Alg == b.Alg && a.Use == b.Use && slices.Equal(a.KeyOps, b.KeyOps) &&
		a.Local == b.Local && a.Issuer == b.Issuer
}
