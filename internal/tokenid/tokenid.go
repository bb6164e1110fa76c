// Package tokenid identifies tokens by a keyed 128-bit MAC, so that a cache
// can hold a token's verdict without holding the token.
//
// The MAC is AES-GMAC under a key drawn at random for each [Hasher]: GHASH
// is almost-XOR-universal, so two different tokens of at most L blocks of
// 16 bytes get the same tag with probability at most (L+1)/2^128 over the
// key (at most about 2^-118 for a 16 KiB token); the key never leaves the
// process and tags are never exposed (not in logs, metrics or responses), so
// an attacker who wants a forged token to hit a cached answer can only
// guess, one request at a time. GMAC, not SHA-256, because it costs about
// 0.2 µs for a 780-byte token where SHA-256 costs about 0.55 µs. Where GCM
// is refused (GODEBUG=fips140=only) the tag is the first 128 bits of
// SHA-256 instead: correct, slower.
//
// The verified-token cache (package verify) and the introspection cache
// (package introspect) both key by it.
package tokenid

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"unsafe"
)

// ID identifies one token under one [Hasher]'s key.
type ID [16]byte

// Slot returns the first 8 bytes of the ID as an integer, for a map key or
// a shard index; a caller confirms a hit on the whole ID.
func (id *ID) Slot() uint64 { return binary.LittleEndian.Uint64(id[:8]) }

// Hasher computes token identities under its own random key. It is safe for
// concurrent use and never blocks.
type Hasher struct {
	gmac  cipher.AEAD // nil: SHA-256
	nonce [12]byte
	// tags holds *ID scratch buffers for Seal: a buffer on the stack would
	// escape through the interface call and cost an allocation per lookup.
	tags sync.Pool
}

// New returns a Hasher with a fresh random key. useGMAC false (tests of the
// fallback) uses SHA-256, as FIPS 140-only mode does.
func New(useGMAC bool) *Hasher {
	t := &Hasher{tags: sync.Pool{New: func() any { return new(ID) }}}
	if !useGMAC {
		return t
	}
	var key [16]byte
	rand.Read(key[:]) // never fails (crypto/rand)
	blk, err := aes.NewCipher(key[:])
	if err != nil {
		return t
	}
	if t.gmac, err = cipher.NewGCM(blk); err != nil {
		t.gmac = nil // FIPS 140-only mode refuses GCM with a chosen nonce
	}
	return t
}

// GMAC reports whether the Hasher uses AES-GMAC (false: SHA-256).
func (t *Hasher) GMAC() bool { return t.gmac != nil }

// Of returns token's identity. It does not allocate.
func (t *Hasher) Of(token string) (id ID) {
	if t.gmac == nil {
		sum := sha256.Sum256(readOnlyBytes(token))
		copy(id[:], sum[:])
		return id
	}
	buf := t.tags.Get().(*ID)
	// The same nonce for every token is sound here: the tag is used as a
	// MAC under a secret key and never disclosed, and nothing is encrypted.
	copy(id[:], t.gmac.Seal(buf[:0], t.nonce[:], nil, readOnlyBytes(token)))
	t.tags.Put(buf)
	return id
}

// readOnlyBytes returns the bytes of s without copying them, for a function
// that only reads its argument and does not keep it. Writing to the result
// is undefined behaviour.
func readOnlyBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
