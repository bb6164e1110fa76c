package verify

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"log/slog"
	"sync/atomic"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify/internal/ecverify"
	"github.com/jwksverify/jwksverify/verify/internal/rsaverify"
)

// The crypto seam: how RS*, PS* and ES* signatures are checked.
//
// A key's material is public data in cache.Key; what makes verification fast
// is the verifier's business. By default RS* and PS* verify with
// verify/internal/rsaverify (the modulus and its Montgomery constants computed once
// per key) and ES* with verify/internal/ecverify (a table of the key's multiples):
// the prepared paths, taking 30–70% less time than crypto/rsa and crypto/ecdsa
// (rsa.go, ecdsa.go). A key is prepared on its first use, not when it enters
// a set, and the prepared form is kept in the key's memo slot
// (cache.Key.Memo), so it lives as long as the *cache.Key — which the fetcher
// keeps across refreshes while the key is unchanged. A hot path costs one
// atomic load and a type assertion to find it: no map, no lock, no parse.
//
// Three guards keep the prepared paths honest at run time:
//
//   - Options.StandardCrypto routes every verification to crypto/rsa and
//     crypto/ecdsa, as FIPS 140-3 mode and BoringCrypto builds always do
//     (rsaverify.Enabled, ecverify.Enabled).
//   - The cross-check: every accept of a key not yet proven for the token's
//     algorithm, and a sampled fraction (Options.CrossCheckRate) of the
//     accepts after, are verified again with the standard library. A key is
//     proven for an algorithm by its first accept under it on which both
//     agree (an RSA key serving RS256 and PS256 is proven for each apart).
//     A disagreement rejects the token (bad_signature),
//     logs at error, counts in CryptoStats, drops the token cache's verdicts
//     and turns the prepared path off for the Verifier's lifetime and its
//     successors' (Options.Previous, crossState): the prepared code is
//     proven wrong, so the standard library does every later verify.
//     Rejections are never
//     cross-checked: a prepared path that refuses too much fails closed on
//     its own, and checking them twice would double the cost of a flood of
//     forged tokens. Cached verdicts are not checked again either: the token
//     cache's hits never reach this code.
//   - Tests and fuzz targets in verify/internal/rsaverify, verify/internal/ecverify and
//     here hold the prepared paths to the standard library's verdicts, and
//     .ci/bigmod-drift holds verify/internal/bigmod to the toolchain's copy.
//
// The cross-check's cost at the default rate (1 in 1000 accepts): one more
// standard verification per thousand, about 0.03–0.05 µs and 0.01 allocations
// per accepted RS256-2048 token (a crypto/rsa verify: 30–45 µs, 9
// allocations), 0.08 µs per ES256 token (crypto/ecdsa: 75 µs), and on every
// accept an atomic increment and a 64-bit mix, a few nanoseconds. A key's
// first use costs its preparation (for RSA-2048 about a third of a crypto/rsa
// verify, 10 µs; for an EC table 0.2–4.8 ms) and one standard verification.

// DefaultCrossCheckRate is the fraction of accepts with a proven key that
// are verified again with the standard library when
// Options.CrossCheckRate is zero.
const DefaultCrossCheckRate = 1.0 / 1000

// CryptoStats are the counters of the cross-check (see
// [Options.CrossCheckRate]), since the Verifier was built.
type CryptoStats struct {
	// CrossChecks counts accepts of the prepared verifiers that were verified
	// again with crypto/rsa or crypto/ecdsa.
	CrossChecks uint64
	// Mismatches counts the cross-checks the standard library refused: each
	// such token was rejected as bad_signature and logged at error. Anything
	// but zero is a bug in a prepared verifier: report it, and set
	// Options.StandardCrypto until it is fixed.
	Mismatches uint64
}

// CryptoStats returns the cross-check's counters. It is safe for concurrent
// use; the counters are zero when Options.StandardCrypto is set or the
// standard library is used anyway (FIPS 140-3 mode, BoringCrypto).
func (v *Verifier) CryptoStats() CryptoStats {
	st := v.sig.cross.st
	return CryptoStats{CrossChecks: st.checks.Load(), Mismatches: st.mismatches.Load()}
}

// preparedCrypto is the seam between the verifier and its prepared
// signature verifiers. A nil function means the standard library does that
// family's work, so the zero value is crypto/rsa and crypto/ecdsa for
// everything. Each function reports whether sig is a valid signature of
// signing under the prepared key; it hashes signing itself, so that the
// digest stays on its stack (a function value's arguments escape).
type preparedCrypto struct {
	rs func(k *rsaverify.PublicKey, rs *rsSpec, signing string, sig []byte) bool
	es func(k *ecverify.PublicKey, es *esSpec, signing string, sig []byte) bool
}

// drops reports whether c lacks a prepared verifier that prev has.
func (c preparedCrypto) drops(prev preparedCrypto) bool {
	return prev.rs != nil && c.rs == nil || prev.es != nil && c.es == nil
}

// checksMore reports whether s cross-checks every accept of a prepared
// verifier where prev, which had one, checked only a sample: the verdicts
// prev cached include accepts that s would have checked (and that an
// operator who raised CrossCheckRate to 1 no longer trusts unchecked).
func (s *signer) checksMore(prev *signer) bool {
	return s.cross.all && !prev.cross.all && (prev.prepared.rs != nil || prev.prepared.es != nil)
}

// defaultCrypto is the seam of a Verifier without StandardCrypto: the
// prepared verifiers, each unless it steps aside for FIPS 140-3 mode or
// BoringCrypto.
func defaultCrypto() preparedCrypto {
	var c preparedCrypto
	if rsaverify.Enabled() {
		c.rs = verifyRSPrepared
	}
	if ecverify.Enabled() {
		c.es = verifyESPrepared
	}
	return c
}

// preparedKey is what the verifier keeps in a key's memo slot.
type preparedKey struct {
	// src is the cache.Key's Public it was prepared from (a *rsa.PublicKey
	// or *ecdsa.PublicKey): a copy of the Key struct shares its memo slot,
	// and a copy whose Public was changed must not use it.
	src any
	rsa *rsaverify.PublicKey // for an RSA key, else nil
	ec  *ecverify.PublicKey  // for an EC key, else nil
	// proven holds the algSpec.bit of each algorithm a cross-check on
	// which the prepared and the standard verifier agreed proved for this
	// key, and is cleared by a disagreement. Per algorithm, not per key:
	// an RSA key without a JWK alg serves RS* and PS* under three hashes,
	// each its own code in the prepared verifier, so a key proven under
	// RS256 is not proven under PS256.
	proven atomic.Uint32
	// broken is set by a disagreement, for good: the prepared form is
	// wrong for this key, and the standard library does its work from then on.
	broken atomic.Bool
}

// prepareKey is the memo fill of every key: its prepared form, or a nil
// *preparedKey for a key without one (Ed25519, oct, or material the prepared
// verifiers refuse). It never fails a key: the standard library decides then.
func prepareKey(k *cache.Key) any {
	switch pub := k.Public.(type) {
	case *rsa.PublicKey:
		if pk, err := rsaverify.NewPublicKey(pub); err == nil {
			return &preparedKey{src: pub, rsa: pk}
		}
	case *ecdsa.PublicKey:
		if pk, err := ecverify.NewPublicKey(pub); err == nil {
			return &preparedKey{src: pub, ec: pk}
		}
	}
	return (*preparedKey)(nil)
}

// signer checks RS*, PS* and ES* signatures for one Verifier: the seam, the
// cross-check and the log its mismatches go to. Immutable after newSigner
// but for the cross-check's counters.
type signer struct {
	prepared preparedCrypto
	cross    *crossCheck // never nil
	log      *slog.Logger
	// onMismatch, if set, runs after a disagreement (the Verifier drops its
	// cached verdicts: some may be forgeries the prepared path accepted).
	onMismatch func()
}

// newSigner builds the signature step for opts (checked by CheckOptions)
// with prepared as the seam, unless opts.StandardCrypto asks for the
// standard library.
func newSigner(opts Options, prepared preparedCrypto) signer {
	rate := cmp.Or(opts.CrossCheckRate, DefaultCrossCheckRate)
	if opts.StandardCrypto {
		prepared = preparedCrypto{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return signer{prepared: prepared, cross: newCrossCheck(rate), log: log}
}

// verify reports whether sig is a valid signature of signing with alg a
// under key, for issuer is (named in the log of a mismatch). HS* and EdDSA
// use golang-jwt's signing methods; RS*, PS* and ES* the prepared verifiers
// when the seam has them and the key has a prepared form (cross-checked as
// the comment at the top of this file says), else the standard library.
func (s *signer) verify(is *issuer, a *algSpec, signing string, sig []byte, key *cache.Key) bool {
	if a.rs == nil && a.es == nil {
		return a.method.Verify(signing, sig, key.Public) == nil
	}
	var p *preparedKey // non-nil only when the seam has a's family
	if (a.rs != nil && s.prepared.rs != nil || a.es != nil && s.prepared.es != nil) && !s.cross.st.off.Load() {
		// src is a pointer, so the comparison never panics (an interface
		// holding another type is unequal).
		if p, _ = key.Memo(prepareKey).(*preparedKey); p != nil && (p.src != key.Public || p.broken.Load()) {
			p = nil
		}
	}
	switch {
	case p != nil && a.rs != nil && p.rsa != nil:
		if !s.prepared.rs(p.rsa, a.rs, signing, sig) {
			return false
		}
	case p != nil && a.es != nil && p.ec != nil:
		if !s.prepared.es(p.ec, a.es, signing, sig) {
			return false
		}
	default:
		return verifyStandard(a, signing, sig, key)
	}
	if p.proven.Load()&uint32(a.bit) != 0 && !s.cross.sample() {
		return true
	}
	return s.crossCheck(is, a, signing, sig, key, p)
}

// crossCheck verifies again with the standard library a signature that the
// prepared verifier accepted, and reports whether both agree.
func (s *signer) crossCheck(is *issuer, a *algSpec, signing string, sig []byte, key *cache.Key, p *preparedKey) bool {
	st := s.cross.st
	st.checks.Add(1)
	if verifyStandard(a, signing, sig, key) {
		if bit := uint32(a.bit); p.proven.Load()&bit == 0 {
			p.proven.Or(bit)
		}
		return true
	}
	p.proven.Store(0)
	p.broken.Store(true)
	st.off.Store(true)
	st.mismatches.Add(1)
	if s.onMismatch != nil {
		s.onMismatch()
	}
	if drop := st.newest.Load(); drop != nil {
		(*drop)()
	}
	// Never the token, its signature or its claims: the key and the
	// algorithm are what a maintainer needs to reproduce the disagreement.
	s.log.LogAttrs(context.Background(), slog.LevelError,
		"verify: a prepared signature verifier accepted what the standard library refuses; token rejected as bad_signature",
		slog.String("issuer", is.cfg.Issuer), slog.String("alg", a.name), slog.String("kid", key.Kid),
		slog.String("kty", key.Kty), slog.Int("size", key.Size), slog.String("thumbprint", key.Thumbprint))
	return false
}

// verifyStandard checks an RS*, PS* or ES* signature with crypto/rsa or
// crypto/ecdsa.
func verifyStandard(a *algSpec, signing string, sig []byte, key *cache.Key) bool {
	if a.rs != nil {
		pub, ok := key.Public.(*rsa.PublicKey)
		return ok && verifyRSStandard(a.rs, pub, signing, sig)
	}
	pub, ok := key.Public.(*ecdsa.PublicKey)
	return ok && verifyES(a.es, pub, signing, sig)
}

// crossCheck samples the accepts of proven keys and counts the checks. It
// is hit by every accepted prepared verification of every goroutine, so it
// takes no lock: one atomic increment, mixed into a pseudo-random 64-bit
// value (SplitMix64's finalizer) under a seed drawn per Verifier, and
// compared with a threshold. The mix makes which accepts are checked
// unpredictable to a client, unlike every n-th; the seed keeps verifiers
// apart.
type crossCheck struct {
	n         atomic.Uint64 // accepts of proven keys so far
	seed      uint64
	threshold uint64 // sample when mix < threshold; 0 with all: never
	all       bool   // rate 1: every accept
	// st is shared by a Verifier and its successors (Options.Previous):
	// a disagreement seen by either, before or after the reload's swap,
	// holds for both.
	st *crossState
	// The struct fills two cache lines alone (a 128-byte size class is
	// 128-aligned), so that n's increments do not bounce a line that holds
	// another object, say one the token cache's hits read.
	_ [128 - 5*8]byte
}

// crossState is what a disagreement changes, shared by a Verifier and the
// verifiers that replace it ([Options.Previous]): the predecessor still
// finishes the requests it started after the swap, and a reload builds its
// verifier before it swaps it in (waiting up to 10s for an added issuer's
// keys), so a disagreement the predecessor sees then must reach the
// successor. Copied at New, it was lost: the successor went on trusting
// the prepared code proven wrong, a proven key's forgeries accepted
// unsampled.
type crossState struct {
	checks     atomic.Uint64
	mismatches atomic.Uint64
	// off is set by the first disagreement: it means verify/internal/rsaverify or
	// verify/internal/ecverify is wrong, not one key, so every later verify of this
	// Verifier and of its successors goes to the standard library (one
	// atomic load per verify).
	off atomic.Bool
	// newest drops the cached verdicts of the newest verifier sharing the
	// state (nil: it has no cache): the verdicts its prepared path
	// accepted before it went off, also when its cache is not the one of
	// the verifier that saw the disagreement (a reload that changed
	// token_cache).
	newest atomic.Pointer[func()]
}

func newCrossCheck(rate float64) *crossCheck {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	c := &crossCheck{seed: binary.LittleEndian.Uint64(b[:]), st: &crossState{}}
	switch {
	case rate >= 1:
		c.all = true
	case rate > 0:
		c.threshold = uint64(rate * (1 << 64))
	}
	return c
}

// sample reports whether this accept of a proven key is to be cross-checked.
func (c *crossCheck) sample() bool {
	if c.all {
		return true
	}
	if c.threshold == 0 {
		return false
	}
	x := c.seed + c.n.Add(1)*0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x^x>>31 < c.threshold
}
