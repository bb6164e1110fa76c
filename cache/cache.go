// Package cache holds the per-issuer sets of pre-parsed public keys that the
// verifier reads on every request.
//
// A [Key] is public material (a crypto/rsa, crypto/ecdsa or ed25519 key, or a
// local HMAC secret) with its JWK metadata; how a signature is checked with it
// is package verify's business, which keeps whatever it derives from the key
// (a prepared form) in the key's [Key.Memo] slot. A [Set] is an immutable
// snapshot: keys indexed by kid, built once by a fetcher (package jwks) or
// from local configuration, and never modified after it is published. [Keys]
// is the per-issuer holder: readers call [Keys.Load] (one atomic load, no
// lock) and writers replace the whole set with [Keys.Store]. The package does
// no I/O and starts no goroutines.
package cache

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// MinRSABits is the smallest RSA modulus accepted for a signing key (RFC 7518 §3.3).
const MinRSABits = 2048

// MaxRSABits is the largest RSA modulus accepted, as crypto/tls accepts in
// certificates: preparing a key and every verification with it take time
// that grows with the square of the size, so a bound keeps a hostile JWKS
// from costing seconds per key.
const MaxRSABits = 8192

// Key is one pre-parsed verification key: public material and its JWK
// metadata. Build it with [NewKey]; it is immutable once built and safe for
// concurrent use. Share the *Key rather than copying the struct: a copy
// shares the original's memo slot ([Key.Memo]).
type Key struct {
	// Kid is the JWK "kid", or "" when the key has none.
	Kid string
	// Kty is the JWK key type: "RSA", "EC", "OKP" or "oct".
	Kty string
	// Crv is the curve for EC ("P-256", "P-384", "P-521") and OKP ("Ed25519") keys.
	Crv string
	// Alg is the JWK "alg", or "" when the JWK does not name one.
	Alg string
	// Use is the JWK "use", or "" when absent.
	Use string
	// KeyOps is the JWK "key_ops", or nil when absent.
	KeyOps []string
	// Size is the key size in bits (modulus, curve order, or secret length).
	Size int
	// Public is the crypto key: *rsa.PublicKey, *ecdsa.PublicKey,
	// ed25519.PublicKey, or []byte for an oct (HMAC) secret.
	Public any
	// Thumbprint is the RFC 7638 SHA-256 JWK thumbprint, base64url without
	// padding. It identifies the key material in logs and listings.
	Thumbprint string
	// Local reports that the key came from local configuration (a file or a
	// secret), not from a remote JWKS. Only local keys may be oct.
	Local bool
	// Issuer is the non-standard per-key "issuer" member some IdPs publish
	// (Microsoft Entra), or "". When set, the verifier requires the token's
	// iss to match it (after {tenantid} substitution).
	Issuer string

	memo *memo // set by NewKey; nil in a Key built as a struct literal (no slot)
}

// memo is a Key's write-once slot; see [Key.Memo].
type memo struct {
	once sync.Once
	v    any
}

// Memo returns fill(k), computed once for the life of k: the first call runs
// fill and stores its result, and every later call, from any goroutine,
// returns that result without calling fill (one atomic load; no lock, no
// allocation). Calls that arrive while the first runs wait for it. fill must
// derive its result from k's public material only and must not call Memo on
// k. A Key not built by [NewKey] has no slot: Memo returns nil without
// calling fill (the verifier then uses the standard library, instead of
// deriving, and cross-checking, a prepared form on every verification).
//
// The slot is the verifier's: package verify keeps there the key's form
// prepared for repeated verification (for RSA the modulus with its
// Montgomery constants, for EC the point and its table of multiples), so the
// work is done once per key, on its first use, and lives as long as the
// *Key — which a fetcher keeps across refreshes while the key is unchanged.
// Since only the first fill runs, every caller of one Key must pass the same
// fill; no other package should call it.
func (k *Key) Memo(fill func(*Key) any) any {
	m := k.memo
	if m == nil {
		return nil
	}
	m.once.Do(func() { m.v = fill(k) })
	return m.v
}

// Equal reports whether k and o hold the same material and metadata (two
// nil keys are equal). A process reloading its configuration compares a
// re-read secret with the one it has, to keep what was built on it.
func (k *Key) Equal(o *Key) bool {
	if k == o {
		return true
	}
	if k == nil || o == nil || k.Kid != o.Kid || k.Kty != o.Kty || k.Crv != o.Crv || k.Alg != o.Alg ||
		k.Use != o.Use || !slices.Equal(k.KeyOps, o.KeyOps) || k.Size != o.Size || k.Local != o.Local || k.Issuer != o.Issuer {
		return false
	}
	if a, ok := k.Public.([]byte); ok {
		b, ok := o.Public.([]byte)
		return ok && subtle.ConstantTimeCompare(a, b) == 1
	}
	pub, ok := k.Public.(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(o.Public)
}

// KeyMeta carries the JWK members that describe a key besides its material.
type KeyMeta struct {
	Kid    string
	Alg    string
	Use    string
	KeyOps []string
	Local  bool
	Issuer string
}

// NewKey builds a Key from a crypto public key (or an HMAC secret as []byte)
// and its JWK metadata. It copies the material, computes kty, curve, size and
// thumbprint, and refuses what must never be used to verify: RSA keys under
// [MinRSABits] or over [MaxRSABits], with the ROCA fingerprint
// ([HasROCAFingerprint]) or with an exponent crypto/rsa refuses,
// points off their curve, unsupported curves, an empty secret, and secrets
// that are not Local. It does no preparation for verification (see
// [Key.Memo]).
func NewKey(pub any, meta KeyMeta) (*Key, error) {
	k := &Key{
		Kid:    meta.Kid,
		Alg:    meta.Alg,
		Use:    meta.Use,
		KeyOps: slices.Clone(meta.KeyOps),
		Local:  meta.Local,
		Issuer: meta.Issuer,
		memo:   new(memo),
	}
	var members map[string]string
	switch p := pub.(type) {
	case *rsa.PublicKey:
		if p == nil || p.N == nil {
			return nil, fmt.Errorf("%w: nil RSA key", ErrUnsupportedKey)
		}
		// A copy: the thumbprint (and whatever the verifier derives from the
		// key) describe this key whatever the caller later does with theirs.
		p = &rsa.PublicKey{N: new(big.Int).Set(p.N), E: p.E}
		pub = p
		k.Kty, k.Size = "RSA", p.N.BitLen()
		if k.Size < MinRSABits {
			return nil, fmt.Errorf("%w: RSA key of %d bits (minimum %d)", ErrWeakKey, k.Size, MinRSABits)
		}
		if k.Size > MaxRSABits {
			return nil, fmt.Errorf("%w: RSA key of %d bits (maximum %d)", ErrUnsupportedKey, k.Size, MaxRSABits)
		}
		if HasROCAFingerprint(p.N) {
			return nil, fmt.Errorf("%w: RSA key with the ROCA fingerprint (CVE-2017-15361): its private key can be computed", ErrWeakKey)
		}
		// crypto/rsa verifies only with an odd public exponent in [3, 2^31-1]
		// and an odd modulus; refuse others here, whatever the key's source.
		if p.E < 3 || p.E&1 == 0 || p.E > 1<<31-1 || p.N.Bit(0) == 0 {
			return nil, fmt.Errorf("%w: RSA key with exponent %d or an even modulus", ErrUnsupportedKey, p.E)
		}
		members = map[string]string{"e": b64(big.NewInt(int64(p.E)).Bytes()), "kty": "RSA", "n": b64(p.N.Bytes())}
	case *ecdsa.PublicKey:
		if p == nil || p.Curve == nil {
			return nil, fmt.Errorf("%w: nil EC key", ErrUnsupportedKey)
		}
		var size int
		switch p.Curve {
		case elliptic.P256():
			k.Crv, size = "P-256", 32
		case elliptic.P384():
			k.Crv, size = "P-384", 48
		case elliptic.P521():
			k.Crv, size = "P-521", 66
		default:
			return nil, fmt.Errorf("%w: EC curve %s", ErrUnsupportedKey, p.Curve.Params().Name)
		}
		k.Kty, k.Size = "EC", p.Curve.Params().BitSize
		raw, err := p.Bytes() // uncompressed point: 0x04 || X || Y
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnsupportedKey, err)
		}
		// A copy, parsed back from the encoding (which checks the point is
		// on the curve): the key is the verifier's whatever the caller later
		// does with theirs.
		ec, err := ecdsa.ParseUncompressedPublicKey(p.Curve, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnsupportedKey, err)
		}
		pub = ec
		members = map[string]string{"crv": k.Crv, "kty": "EC", "x": b64(raw[1 : 1+size]), "y": b64(raw[1+size:])}
	case ed25519.PublicKey:
		if len(p) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: Ed25519 key of %d bytes", ErrUnsupportedKey, len(p))
		}
		if ed25519SmallOrder(p) {
			return nil, fmt.Errorf("%w: Ed25519 key of small order: signatures under it can be computed without a private key", ErrWeakKey)
		}
		k.Kty, k.Crv, k.Size = "OKP", "Ed25519", 256
		pub = slices.Clone(p)
		members = map[string]string{"crv": "Ed25519", "kty": "OKP", "x": b64(p)}
	case []byte:
		if !meta.Local {
			return nil, fmt.Errorf("%w: symmetric (oct) keys are accepted only from local configuration", ErrUnsupportedKey)
		}
		if len(p) == 0 {
			return nil, fmt.Errorf("%w: empty secret", ErrWeakKey)
		}
		k.Kty, k.Size = "oct", 8*len(p)
		members = map[string]string{"k": b64(p), "kty": "oct"}
		pub = slices.Clone(p)
	default:
		return nil, fmt.Errorf("%w: %T", ErrUnsupportedKey, pub)
	}
	k.Public = pub
	k.Thumbprint = thumbprint(members)
	return k, nil
}

// ed25519SmallOrder reports whether the Ed25519 public key pub encodes a
// point of small order: the identity, or one of the 7 other points of order
// 2, 4 or 8, with either sign and in the non-canonical encodings
// crypto/ed25519 accepts (y + p for y < 19). crypto/ed25519 verifies
// cofactorless ([S]B = R + [k]A): with such an A, [k]A takes at most 8
// values, so R = [S]B - [k]A verifies most messages without any private key
// (for the identity, R = B and S = 1 verify every message). The check is a
// table lookup, libsodium's blocklist (ge25519_has_small_order): the y of
// every such point, the sign bit ignored — no arithmetic on the point.
func ed25519SmallOrder(pub ed25519.PublicKey) bool {
	var y [32]byte
	copy(y[:], pub)
	y[31] &= 0x7f // the sign of x; the order of -P is that of P
	for _, b := range ed25519SmallOrderY {
		if y == b {
			return true
		}
	}
	return false
}

// ed25519SmallOrderY are the little-endian y coordinates of the Ed25519
// points of small order, the sign bit cleared: 0 (order 4), 1 (order 1),
// the two y of the points of order 8, p-1 (order 2), and the non-canonical
// p (0) and p+1 (1).
var ed25519SmallOrderY = [...][32]byte{
	{},
	{0x01},
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
		0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
		0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
	pMinus(1), pMinus(0), pMinus(-1),
}

// pMinus returns the little-endian encoding of p - d, p = 2^255 - 19, for a
// small d.
func pMinus(d int) [32]byte {
	var b [32]byte
	for i := range b {
		b[i] = 0xff
	}
	b[31] = 0x7f
	b[0] = byte(0xed - d)
	return b
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// thumbprint computes RFC 7638: SHA-256 over the required members in
// lexicographic order, without white space. json.Marshal of a map sorts keys.
func thumbprint(members map[string]string) string {
	j, _ := json.Marshal(members)
	sum := sha256.Sum256(j)
	return b64(sum[:])
}

// Skipped describes a key that was left out of a set, and why.
type Skipped struct {
	// Index is the key's position in the JWKS "keys" array.
	Index int `json:"index"`
	// Kid is the key's kid, or "" if it had none or it could not be read.
	Kid string `json:"kid,omitempty"`
	// Kty is the key's kty as published, or "".
	Kty string `json:"kty,omitempty"`
	// Reason says why the key was skipped, for people and logs.
	Reason string `json:"reason"`
}

// Set is an immutable snapshot of one issuer's keys. Build it with [NewSet];
// never modify it after publishing. A Set is safe for concurrent use.
type Set struct {
	byKid   map[string]*Key
	keys    []*Key
	anyKid  []*Key // keys without kid: candidates for kid-less tokens only
	skipped []Skipped

	// FetchedAt is when the set was last confirmed by its source (a fetch,
	// a 304 Not Modified, or a file load).
	FetchedAt time.Time
	// UsableUntil is the end of the set's bounded staleness: after it the
	// issuer has no usable keys. The zero time means the set never goes stale
	// (keys from local configuration).
	UsableUntil time.Time
}

// NewSet builds a Set from keys. When two keys share a kid, the first wins
// and the later ones are reported as skipped. skipped lists keys the caller
// already left out; it is kept for reporting.
func NewSet(keys []*Key, skipped []Skipped, fetchedAt, usableUntil time.Time) *Set {
	s := &Set{
		byKid:       make(map[string]*Key, len(keys)),
		keys:        make([]*Key, 0, len(keys)),
		skipped:     slices.Clone(skipped),
		FetchedAt:   fetchedAt,
		UsableUntil: usableUntil,
	}
	for i, k := range keys {
		if k == nil {
			continue
		}
		if k.Kid == "" {
			s.anyKid = append(s.anyKid, k)
			s.keys = append(s.keys, k)
			continue
		}
		if _, dup := s.byKid[k.Kid]; dup {
			s.skipped = append(s.skipped, Skipped{Index: i, Kid: k.Kid, Kty: k.Kty, Reason: "duplicate kid"})
			continue
		}
		s.byKid[k.Kid] = k
		s.keys = append(s.keys, k)
	}
	return s
}

// WithTimes returns a copy of s that shares its keys but carries new fetch
// and staleness times: what a 304 Not Modified publishes.
func (s *Set) WithTimes(fetchedAt, usableUntil time.Time) *Set {
	c := *s
	c.FetchedAt, c.UsableUntil = fetchedAt, usableUntil
	return &c
}

// SameKeys reports whether s and o hold the same keys, by identity: o is s,
// or one was made from the other by [Set.WithTimes] (a 304 Not Modified).
// A set parsed again from the same document is not the same. It is a
// pointer compare, for callers that remember a set a key was found in.
func (s *Set) SameKeys(o *Set) bool {
	if s == nil || o == nil || len(s.keys) == 0 || len(s.keys) != len(o.keys) {
		return false
	}
	return &s.keys[0] == &o.keys[0]
}

// Lookup returns the key with the given kid. It is O(1) and does not allocate.
func (s *Set) Lookup(kid string) (*Key, bool) {
	if s == nil {
		return nil, false
	}
	k, ok := s.byKid[kid]
	return k, ok
}

// Keys returns every key of the set, in source order. The slice is shared:
// callers must not modify it.
func (s *Set) Keys() []*Key {
	if s == nil {
		return nil
	}
	return s.keys
}

// KidlessKeys returns the keys that have no kid. The slice is shared: callers
// must not modify it.
func (s *Set) KidlessKeys() []*Key {
	if s == nil {
		return nil
	}
	return s.anyKid
}

// Skipped returns the keys that were left out of the set and why.
func (s *Set) Skipped() []Skipped {
	if s == nil {
		return nil
	}
	return s.skipped
}

// Len reports the number of usable keys in the set.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.keys)
}

// Usable reports whether the set may verify tokens at now: it exists, and
// it is within its bounded staleness.
func (s *Set) Usable(now time.Time) bool {
	return s != nil && (s.UsableUntil.IsZero() || !now.After(s.UsableUntil))
}

// Keys is the holder of one issuer's current key set, its status and its
// live counters. Readers never lock: [Keys.Load] is one atomic load. The
// zero value is ready to use and holds no set. Keys is safe for concurrent
// use.
type Keys struct {
	set      atomic.Pointer[Set]
	status   atomic.Pointer[Status]
	neg      negative
	counters Counters
}

// Load returns the current set, or nil when none has been published.
func (k *Keys) Load() *Set { return k.set.Load() }

// Store publishes s as the current set, replacing the previous one whole.
// Kids remembered as missing that s now holds are forgotten.
func (k *Keys) Store(s *Set) {
	k.set.Store(s)
	k.neg.forgetPresent(s)
}

// Status returns the last status published with [Keys.SetStatus] (the zero
// Status before one), with Stats read from the live [Keys.Counters] at the
// call, not when the status was published.
func (k *Keys) Status() Status {
	var st Status
	if s := k.status.Load(); s != nil {
		st = *s
	}
	st.Stats = k.counters.Load()
	return st
}

// SetStatus publishes the source's status (for /v1/issuers and metrics).
// Its Stats are ignored: [Keys.Status] reads the live counters.
func (k *Keys) SetStatus(s Status) { k.status.Store(&s) }

// Counters returns the live counters of this issuer's key source, which the
// source increments and [Keys.Status] reads. The pointer is k's own, valid
// for k's lifetime.
func (k *Keys) Counters() *Counters { return &k.counters }

// RememberMissing records that kid was just proven absent from the source,
// until until. The memory is bounded ([MaxMissing] kids); when full, the
// oldest entries are dropped.
func (k *Keys) RememberMissing(kid string, until time.Time) { k.neg.remember(kid, until) }

// RecentlyMissing reports whether kid was proven absent and the memory of it
// has not expired at now. Each true answer counts in
// [FetchStats.NegativeKidHits].
func (k *Keys) RecentlyMissing(kid string, now time.Time) bool {
	if !k.neg.has(kid, now) {
		return false
	}
	k.counters.NegativeKidHits.Add(1)
	return true
}

// MaxMissing bounds the negative-kid memory of one issuer.
const MaxMissing = 4096

// MaxMissingKidLen is the longest kid the negative memory holds; longer kids
// are not remembered.
const MaxMissingKidLen = 256

type negative struct {
	mu    sync.Mutex
	until map[string]time.Time
	order []string // insertion order, for bounded eviction
}

func (n *negative) remember(kid string, until time.Time) {
	if len(kid) > MaxMissingKidLen {
		return // a budgeted refresh still limits such kids; do not hold their bytes
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.until == nil {
		n.until = make(map[string]time.Time)
	}
	if _, ok := n.until[kid]; !ok {
		if len(n.order) >= MaxMissing {
			drop := n.order[:MaxMissing/4]
			for _, d := range drop {
				delete(n.until, d)
			}
			n.order = slices.Delete(n.order, 0, len(drop))
		}
		n.order = append(n.order, kid)
	}
	n.until[kid] = until
}

func (n *negative) has(kid string, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	u, ok := n.until[kid]
	return ok && now.Before(u)
}

func (n *negative) forgetPresent(s *Set) {
	if s == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.until) == 0 {
		return
	}
	for kid := range n.until {
		if _, ok := s.byKid[kid]; ok {
			delete(n.until, kid)
			n.order = slices.DeleteFunc(n.order, func(o string) bool { return o == kid })
		}
	}
}

// Status is what a key source reports about itself: for /v1/issuers, metrics
// and readiness. It is a value; the fields are filled by the source.
type Status struct {
	// Source names where keys come from: a URL, "discovery:<issuer>", "file:<path>", or "static" (StaticKeys alone).
	Source string
	// LastAttempt is when the source was last tried; zero if never.
	LastAttempt time.Time
	// LastSuccess is when the source last confirmed keys (fetch or 304); zero if never.
	LastSuccess time.Time
	// NextRefresh is when the next scheduled refresh is due; zero if none.
	NextRefresh time.Time
	// LastError is the last fetch or parse error, without secrets; "" after a success.
	LastError string
	// ConsecutiveFailures counts failed attempts since the last success.
	ConsecutiveFailures int
	// Stats are the source's counters since it started. [Keys.Status] fills
	// them from the live counters; [Keys.SetStatus] ignores them.
	Stats FetchStats
}

// FetchStats are counters that make a key source's behaviour observable:
// tests assert on them and /metrics exports them. All counts are since start.
type FetchStats struct {
	// Fetches counts requests sent to the source (JWKS or discovery), including failures.
	Fetches uint64
	// NotModified counts 304 Not Modified answers.
	NotModified uint64
	// Errors counts failed attempts (network, status, parse, policy).
	Errors uint64
	// KeysSkipped counts keys left out of parsed sets (unsupported, broken, refused).
	KeysSkipped uint64
	// UnknownKidRefreshes counts refreshes triggered by an unknown kid.
	UnknownKidRefreshes uint64
	// SuppressedRefreshes counts unknown-kid refreshes refused because the
	// per-interval budget was spent or the kid was remembered as missing.
	SuppressedRefreshes uint64
	// NegativeKidHits counts lookups of a kid remembered as missing
	// ([Keys.RecentlyMissing] answering true): tokens answered unknown_kid
	// without asking the source.
	NegativeKidHits uint64
}

// Counters are the live counters behind [FetchStats], owned by a [Keys]
// (see [Keys.Counters]): the key source increments them, and every reader
// ([Keys.Status], a fetcher's Stats) loads the same atomics. The zero value
// is ready; Counters is safe for concurrent use and must not be copied.
type Counters struct {
	Fetches, NotModified, Errors, KeysSkipped atomic.Uint64
	UnknownKidRefreshes, SuppressedRefreshes  atomic.Uint64
	NegativeKidHits                           atomic.Uint64
}

// Load returns the counters' current values. It does not block. The values
// are read one by one, not as one snapshot.
func (c *Counters) Load() FetchStats {
	return FetchStats{
		Fetches:             c.Fetches.Load(),
		NotModified:         c.NotModified.Load(),
		Errors:              c.Errors.Load(),
		KeysSkipped:         c.KeysSkipped.Load(),
		UnknownKidRefreshes: c.UnknownKidRefreshes.Load(),
		SuppressedRefreshes: c.SuppressedRefreshes.Load(),
		NegativeKidHits:     c.NegativeKidHits.Load(),
	}
}
