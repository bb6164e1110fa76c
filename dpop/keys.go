package dpop

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"sync/atomic"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/verify"
)

// DefaultKeyCacheSize is the number of proof keys a [Checker] keeps parsed
// when Options.KeyCacheSize is zero.
const DefaultKeyCacheSize = 1024

// privateMembers are the JWK members of private (or symmetric) keys
// (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2).
var privateMembers = [...]string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// jwkMembers are the members of a proof's jwk that the checks read, each
// read as a string the way the checks always read them (absent, null or
// not a string: ""), and key_ops as its raw JSON text.
type jwkMembers struct {
	kty, crv, x, y, n, e, alg, use string
	keyOps                         string // raw JSON, "" when absent
	private                        uint8  // bit i: privateMembers[i] is present
}

// str returns the member name as jwkPublic reads it.
func (m *jwkMembers) str(name string) string {
	switch name {
	case "kty":
		return m.kty
	case "crv":
		return m.crv
	case "x":
		return m.x
	case "y":
		return m.y
	case "n":
		return m.n
	case "e":
		return m.e
	}
	return ""
}

// readJWK reads the jwk header's JSON text raw.
func readJWK(raw string) (jwkMembers, error) {
	var m jwkMembers
	err := scanObject(raw, func(name, v string) {
		var dst *string
		switch name {
		case "kty":
			dst = &m.kty
		case "crv":
			dst = &m.crv
		case "x":
			dst = &m.x
		case "y":
			dst = &m.y
		case "n":
			dst = &m.n
		case "e":
			dst = &m.e
		case "alg":
			dst = &m.alg
		case "use":
			dst = &m.use
		case "key_ops":
			m.keyOps = v
			return
		default:
			if i := slices.Index(privateMembers[:], name); i >= 0 {
				m.private |= 1 << i
			}
			return
		}
		*dst, _ = stringValue(v)
	})
	return m, err
}

// keyOpsValue reads key_ops as encoding/json unmarshals it into a
// []string: an array whose elements are strings or null (""); null, or
// anything else, is refused.
func keyOpsValue(raw string) ([]string, bool) {
	if raw == "" || raw[0] != '[' {
		return nil, false
	}
	ops := []string{}
	for el := range jsonscan.Elements(raw) {
		s, ok := stringValue(el)
		if !ok {
			return nil, false
		}
		ops = append(ops, s)
	}
	return ops, true
}

// publicKey is step 6's key: the proof's jwk header (raw JSON) built into
// a key (cache.NewKey applies the key-size and curve rules), refusing
// private members, and checked to fit alg by package verify's rule. A key
// whose public members the cache holds, with the same alg, use and
// key_ops, is the cached one: only the parsing is skipped, the fit is
// checked again.
func (c *Checker) publicKey(raw, alg string) (*cache.Key, error) {
	if raw == "" {
		return nil, invalid("no jwk header (a kid alone is not accepted)")
	}
	m, err := readJWK(raw)
	if err != nil {
		return nil, invalid("jwk: %v", err)
	}
	if m.private != 0 {
		for i, p := range privateMembers {
			if m.private&(1<<i) != 0 {
				return nil, invalid("jwk holds the private member %s", quote(p))
			}
		}
	}
	var keyOps []string
	keyOpsOK := true
	if m.keyOps != "" {
		keyOps, keyOpsOK = keyOpsValue(m.keyOps)
	}
	sum, canon := m.thumbprintSum()
	var key *cache.Key
	if canon && keyOpsOK {
		key = c.keys.get(&sum, &m, keyOps)
	}
	if key == nil {
		if key, err = c.parseKey(&m, keyOps, keyOpsOK); err != nil {
			return nil, err
		}
		if canon {
			c.keys.put(&sum, key)
		}
	}
	if err := verify.KeyFits(key, alg); err != nil {
		return nil, invalid("jwk does not fit %s: %v", alg, err)
	}
	return key, nil
}

// parseKey builds the key of the jwk members m, counting the parse.
func (c *Checker) parseKey(m *jwkMembers, keyOps []string, keyOpsOK bool) (*cache.Key, error) {
	c.keys.parses.Add(1)
	pub, err := jwkPublic(m.kty, m.crv, m.str)
	if err != nil {
		return nil, invalid("jwk: %v", err)
	}
	if !keyOpsOK {
		return nil, invalid("jwk: key_ops is not an array of strings")
	}
	key, err := cache.NewKey(pub, cache.KeyMeta{Alg: m.alg, Use: m.use, KeyOps: keyOps})
	if err != nil {
		return nil, invalid("jwk: %v", err)
	}
	return key, nil
}

// thumbprintSum returns the SHA-256 of the RFC 7638 thumbprint input of m's
// public members, and whether m is in the form for which it is the key's
// thumbprint: a kty and curve that jwkPublic knows, and members of the
// base64url alphabet only, so that the input is unambiguous (no member
// can close a string) and names exactly one key. A key whose members are
// not so is parsed every time (and mostly refused).
func (m *jwkMembers) thumbprintSum() (sum [sha256.Size]byte, ok bool) {
	var buf [1536]byte // an 8192-bit modulus is 1366 characters
	b := buf[:0]
	switch {
	case m.kty == "EC" && (m.crv == "P-256" || m.crv == "P-384" || m.crv == "P-521") && isB64(m.x) && isB64(m.y):
		b = append(b, `{"crv":"`...)
		b = append(b, m.crv...)
		b = append(b, `","kty":"EC","x":"`...)
		b = append(b, m.x...)
		b = append(b, `","y":"`...)
		b = append(b, m.y...)
	case m.kty == "OKP" && m.crv == "Ed25519" && isB64(m.x):
		b = append(b, `{"crv":"Ed25519","kty":"OKP","x":"`...)
		b = append(b, m.x...)
	case m.kty == "RSA" && isB64(m.e) && isB64(m.n):
		b = append(b, `{"e":"`...)
		b = append(b, m.e...)
		b = append(b, `","kty":"RSA","n":"`...)
		b = append(b, m.n...)
	default:
		return sum, false
	}
	b = append(b, `"}`...)
	return sha256.Sum256(b), true
}

// isB64 reports whether s is non-empty and of the base64url alphabet only.
func isB64(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return s != ""
}

// keyCache holds the keys of recent proofs, by the SHA-256 of their RFC
// 7638 thumbprint input: a direct-mapped table of atomic pointers (a key
// evicts the one in its slot), so that it is bounded, and readers and
// writers never lock. It is safe to reuse a key: it was built from the same
// public members (the thumbprint input names them without ambiguity), and
// the proof's signature is verified with it every time. One without slots
// holds nothing and still counts.
type keyCache struct {
	slots  []atomic.Pointer[keyEntry]
	mask   uint64
	parses atomic.Uint64
	hits   atomic.Uint64
}

type keyEntry struct {
	sum [sha256.Size]byte
	key *cache.Key
}

// newKeyCache returns a cache of size slots rounded up to a power of two;
// a size below one gives a cache that holds nothing.
func newKeyCache(size int) *keyCache {
	if size < 1 {
		return &keyCache{}
	}
	n := 1
	for n < size {
		n <<= 1
	}
	return &keyCache{slots: make([]atomic.Pointer[keyEntry], n), mask: uint64(n - 1)}
}

// get returns the cached key of sum whose alg, use and key_ops are m's,
// or nil.
func (kc *keyCache) get(sum *[sha256.Size]byte, m *jwkMembers, keyOps []string) *cache.Key {
	if len(kc.slots) == 0 {
		return nil
	}
	e := kc.slots[binary.LittleEndian.Uint64(sum[:8])&kc.mask].Load()
	if e == nil || e.sum != *sum {
		return nil
	}
	k := e.key
	if k.Alg != m.alg || k.Use != m.use || (k.KeyOps == nil) != (m.keyOps == "") || !slices.Equal(k.KeyOps, keyOps) {
		return nil
	}
	kc.hits.Add(1)
	return k
}

// put caches key under sum, when sum is the hash of the thumbprint input
// whose base64url form is key's thumbprint (always so for a key that
// cache.NewKey accepted from canonical members; checked all the same).
func (kc *keyCache) put(sum *[sha256.Size]byte, key *cache.Key) {
	if len(kc.slots) == 0 {
		return
	}
	var tb [43]byte
	if string(base64.RawURLEncoding.AppendEncode(tb[:0], sum[:])) != key.Thumbprint {
		return
	}
	kc.slots[binary.LittleEndian.Uint64(sum[:8])&kc.mask].Store(&keyEntry{sum: *sum, key: key})
}

// KeyStats counts the proof keys a [Checker] parsed and those it found
// parsed in its cache.
type KeyStats struct {
	// Parses counts the jwk headers built into a key (refused ones too).
	Parses uint64
	// Hits counts the proofs whose key came from the cache.
	Hits uint64
}

// KeyStats returns the counts so far. It is safe for concurrent use.
func (c *Checker) KeyStats() KeyStats {
	return KeyStats{Parses: c.keys.parses.Load(), Hits: c.keys.hits.Load()}
}
