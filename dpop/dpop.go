// Package dpop verifies DPoP proofs (RFC 9449): the JWT a client signs with
// its own key for each request, which makes an access token bound to that
// key (cnf.jkt) useless to whoever steals it.
//
// A [Checker] runs every check of RFC 9449 §4.3 on one proof, against the
// original request that the proxy forwarded (package request) and the access
// token it came with, in a fixed order ([Checker.Explain] names each one):
// one proof, its structure, the required claims, typ dpop+jwt, an asymmetric
// alg of the allowlist, a public jwk (no private members) that fits the alg
// by package verify's rules, the signature (the standard library's
// crypto/ecdsa, crypto/ed25519 or crypto/rsa), htm, htu, iat within
// [now - MaxAge, now + leeway], ath, the token's cnf.jkt equal to the key's
// RFC 7638 thumbprint, and last the jti, recorded once in a [ReplayStore]
// so that a replayed proof fails at every replica that shares the store.
//
// The proof is read with the strict JSON scanner package verify reads
// tokens with, and a returning client's key is not parsed again: a bounded
// cache keyed by the key's RFC 7638 thumbprint holds it parsed
// (Options.KeyCacheSize, [Checker.KeyStats]); the signature is checked
// with it every time.
//
// Errors wrap verify.ErrInvalidDPoPProof, verify.ErrBindingMismatch (the
// proof is valid but its key is not the token's), or verify.ErrKeysUnavailable
// (the replay store could not answer: not a verdict, 503).
package dpop

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/asciifold"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// Defaults applied by [New] to zero-valued options.
const (
	DefaultMaxAge        = 60 * time.Second
	DefaultMaxProofBytes = 8192
	// MaxJTIBytes bounds a proof's jti.
	MaxJTIBytes = 256
	// MinMaxAge and MaxMaxAge bound a nonzero MaxAge.
	MinMaxAge, MaxMaxAge = time.Second, 10 * time.Minute
)

// DefaultAlgorithms is the allowlist of proof algorithms when none is
// configured. It returns a new slice on each call.
func DefaultAlgorithms() []string { return []string{"ES256", "PS256", "RS256", "EdDSA"} }

// ReplayStore remembers the proofs already used. Implementations (package
// replay: in-process memory, Redis) must be safe for concurrent use and
// decide atomically: of concurrent calls with one key, exactly one is fresh.
type ReplayStore interface {
	// Use records key as used until now+ttl and reports whether it was
	// unused. An error means the store could not decide; the proof is then
	// refused as "could not decide" (keys_unavailable), never accepted.
	Use(ctx context.Context, key [32]byte, ttl time.Duration, now time.Time) (fresh bool, err error)
}

// ReplayLookup is a [ReplayStore] that can also tell whether a key is in
// use without using it (package replay's stores). A checker over another
// store than the checker it replaces asks the replaced one's store with it
// (see [Options.Replaces]).
type ReplayLookup interface {
	// Used reports whether key is in use at now. An error means the store
	// could not tell; the proof is then refused as "could not decide".
	Used(ctx context.Context, key [32]byte, now time.Time) (bool, error)
}

// Options configure a [Checker].
type Options struct {
	// Algorithms is the allowlist of proof alg values. Empty means
	// [DefaultAlgorithms]. Only asymmetric algorithms of package verify's
	// table are accepted (no HS*, never none).
	Algorithms []string
	// MaxAge is how old a proof's iat may be: [MinMaxAge, MaxMaxAge]. Zero
	// means [DefaultMaxAge].
	MaxAge time.Duration
	// MaxProofBytes bounds a proof. Zero means [DefaultMaxProofBytes].
	MaxProofBytes int
	// Replay records each accepted proof's jti. Required.
	Replay ReplayStore
	// KeyCacheSize is how many proof keys are kept parsed, by their RFC
	// 7638 thumbprint, so that a returning client's proof costs no key
	// parsing (its signature is checked every time). Zero means
	// [DefaultKeyCacheSize]; negative means none.
	KeyCacheSize int
	// Replaces is the checker this one takes over from (a reload), or nil.
	// When Replaces allowed older proofs less long (a smaller MaxAge), the
	// proofs of Replaces' time stay held to its MaxAge: their replay
	// entries were stored for that shorter time, so a longer MaxAge would
	// accept each of them again once its entry is gone. When Replaces
	// records proofs in another store, and that store is a [ReplayLookup],
	// it is asked too, read only, about each proof Replaces may have used
	// (issued no later than the issuer's leeway and a minute after
	// Replaces was retired, [Checker.Retire]; at most [RetiredMargin]),
	// for [RetiredWindow] of Replaces' MaxAge; so are
	// the stores Replaces itself still asked. A store that cannot answer
	// then refuses those proofs as "could not decide", never accepts
	// them. The caller keeps such a store open that long. See
	// [Checker.Check].
	Replaces *Checker
}

// Checker verifies DPoP proofs. It is safe for concurrent use; Check blocks
// only on its ReplayStore.
type Checker struct {
	algs     []string
	maxAge   time.Duration
	maxBytes int
	replay   ReplayStore
	b64      *base64.Encoding
	keys     *keyCache
	// priors are the shorter MaxAges of the checkers this one replaced,
	// oldest first (see [Options.Replaces]).
	priors []*prior
	// retired are the stores of the checkers this one replaced that are
	// not its own, asked about the proofs of their time (see
	// [Options.Replaces]).
	retired []*retired
	// retiredAt is the instant (Unix nanoseconds) this checker stopped
	// taking new checks ([Checker.Retire]), or its successor's first
	// check; 0 until then.
	retiredAt atomic.Int64
	// successor is the checker that replaced this one ([Checker.RetireTo]):
	// a check still running here after the swap records its proof there,
	// so that the successor's store decides between the two.
	successor atomic.Pointer[Checker]
}

// retired is the store of a replaced checker over another store, asked
// whether a proof of its time was used there.
type retired struct {
	maxAge time.Duration // the replaced checker's: its entries' lifetime, less the leeway
	// at is the replaced checker's retiredAt: the proofs it used were
	// issued no later than at + RetiredMargin.
	at *atomic.Int64
	// store is nil once the window is over (a memory store is let go).
	store atomic.Pointer[retiredStore]
}

type retiredStore struct {
	s ReplayStore // for identity: a successor over s itself needs no lookup
	l ReplayLookup
}

// prior is the MaxAge of a replaced checker whose proofs' replay entries
// may outlive it for less than this checker's MaxAge.
type prior struct {
	maxAge time.Duration
	// since is the first instant (Unix nanoseconds) this checker was asked
	// to check a proof, 0 until then: a proof used by the replaced checker
	// was used no later, since a reload swaps checkers before the
	// requests that reach the new one begin.
	since atomic.Int64
}

// priorMargin is how long after a checker's first check a proof may still
// have been used by the checker it replaced: the largest leeway a proof's
// iat may be ahead of its use, and a minute for requests of the replaced
// generation still running.
const priorMargin = verify.MaxLeeway + time.Minute

// priorKept is how long after its since a prior can still decide: beyond
// it, a proof issued by since + priorMargin is older than any MaxAge.
const priorKept = priorMargin + MaxMaxAge

// RetiredMargin is how long after a checker was retired ([Checker.Retire])
// a proof it used may have been issued: the largest leeway, and a minute
// for the requests it was still checking.
const RetiredMargin = priorMargin

// RetiredWindow is how long after a checker of maxAge was retired its
// store may still decide a successor's check over another store: a proof
// it used was issued by RetiredMargin after, and is older than maxAge
// (the successor holds it to that MaxAge when its own is longer) once the
// window is over.
func RetiredWindow(maxAge time.Duration) time.Duration { return RetiredMargin + maxAge }

// CheckOptions reports whether [New] accepts opts, Replay aside (a command
// checks its configuration before it builds the store): an error wrapping
// [ErrInvalidOptions] that names the field first if not. It refuses a
// MaxAge out of [MinMaxAge, MaxMaxAge], a negative MaxProofBytes, and an
// alg that is not an asymmetric algorithm of package verify.
func CheckOptions(opts Options) error {
	if a := opts.MaxAge; a != 0 && (a < MinMaxAge || a > MaxMaxAge) {
		return invalidOption("MaxAge", "%s is out of range [%s, %s]", a, MinMaxAge, MaxMaxAge)
	}
	if opts.MaxProofBytes < 0 {
		return invalidOption("MaxProofBytes", "negative")
	}
	for i, a := range opts.Algorithms {
		if err := CheckAlgorithm(a); err != nil {
			return invalidOption(fmt.Sprintf("Algorithms[%d]", i), "%w", err)
		}
	}
	return nil
}

// New validates opts ([CheckOptions]; Replay is required), applies the
// defaults and returns a Checker.
func New(opts Options) (*Checker, error) {
	if opts.Replay == nil {
		return nil, invalidOption("", "a replay store is required")
	}
	if err := CheckOptions(opts); err != nil {
		return nil, err
	}
	algs := opts.Algorithms
	if len(algs) == 0 {
		algs = DefaultAlgorithms()
	}
	c := &Checker{
		algs:     slices.Clone(algs),
		maxAge:   cmpOr(opts.MaxAge, DefaultMaxAge),
		maxBytes: cmpOr(opts.MaxProofBytes, DefaultMaxProofBytes),
		replay:   opts.Replay,
		b64:      base64.RawURLEncoding.Strict(),
		keys:     newKeyCache(cmpOr(opts.KeyCacheSize, DefaultKeyCacheSize)),
	}
	c.priors = opts.Replaces.priorsFor(c)
	c.retired = opts.Replaces.retiredFor(c)
	return c, nil
}

// Retire records now as the instant c stopped taking new checks: a reload
// swapped in the checker that replaces it. A successor over another store
// asks c's store about the proofs issued until their issuer's leeway and a
// minute after it (at most [RetiredMargin]).
// Without it, the successor's first check stands for it. Only the first
// call counts.
func (c *Checker) Retire(now time.Time) { c.retiredAt.CompareAndSwap(0, now.UnixNano()) }

// RetireTo is Retire, and from now on c's checks still running (requests
// of the generation swapped out) record their proofs through next, the
// checker that replaces c (nil: none), as next's own checks do: a proof
// next accepted is a replay here too, and the other way round.
func (c *Checker) RetireTo(now time.Time, next *Checker) {
	c.Retire(now)
	if next != nil && next != c {
		c.successor.CompareAndSwap(nil, next)
	}
}

// priorsFor returns the priors of next, which replaces c: those of c's
// own that are shorter than next's MaxAge and may still decide, and c's
// MaxAge when it is shorter than next's. Their MaxAges increase along the
// list. A prior may no longer decide once a later one was first used
// priorKept after it. They apply over another store too: its lookup in
// c's store (retiredFor) finds an entry only as long as c kept it.
func (c *Checker) priorsFor(next *Checker) []*prior {
	if c == nil {
		return nil
	}
	var latest int64
	for _, p := range c.priors {
		latest = max(latest, p.since.Load())
	}
	var ps []*prior
	for _, p := range c.priors {
		if s := p.since.Load(); (s == 0 || latest-s < int64(priorKept)) && p.maxAge < next.maxAge {
			ps = append(ps, p)
		}
	}
	if c.maxAge < next.maxAge {
		ps = append(ps, &prior{maxAge: c.maxAge})
	}
	return ps
}

// retiredFor returns the retired stores of next, which replaces c: those
// c still asks, and c's own store when it is not next's and can be asked
// (a ReplayLookup), each unless it is next's store.
func (c *Checker) retiredFor(next *Checker) []*retired {
	if c == nil {
		return nil
	}
	var rs []*retired
	for _, r := range c.retired {
		if st := r.store.Load(); st != nil && st.s != next.replay {
			rs = append(rs, r)
		}
	}
	if l, ok := c.replay.(ReplayLookup); ok && c.replay != next.replay {
		r := &retired{maxAge: c.maxAge, at: &c.retiredAt}
		r.store.Store(&retiredStore{s: c.replay, l: l})
		rs = append(rs, r)
	}
	return rs
}

// InFlightMargin is how long a check may take from the now it is given
// (read when its request began) to its replay store's answer: a proof's
// jti is remembered this much longer than its iat window lasts, so that a
// replay whose check read its clock just inside the window and reached the
// store after the first use's entry would have expired there (the memory
// store purged by a check with a later now, Redis on its own clock) is
// still refused. It is also how long after a checker was retired it may
// still have been checking a request that began before the swap.
const InFlightMargin = time.Minute

// retiredInFlight is how long after a checker was retired it may still
// have been checking a request: one that began before the swap.
const retiredInFlight = InFlightMargin

// used asks r's store whether key, of a proof issued at iat with a token
// of an issuer whose leeway is leeway, was used there, when the proof may
// have been: issued by leeway + retiredInFlight after r's checker was
// retired (a proof's iat is at most the leeway ahead of its check), within
// its window. A later proof never waits on that store, so moving away
// from a dead one refuses proofs (503) for about that long only. Past the
// window the store is let go.
func (r *retired) used(ctx context.Context, key [32]byte, iat, now time.Time, leeway time.Duration) (bool, error) {
	st := r.store.Load()
	if st == nil {
		return false, nil
	}
	at := r.at.Load()
	if at == 0 {
		r.at.CompareAndSwap(0, now.UnixNano())
		at = r.at.Load()
	}
	since := time.Unix(0, at)
	switch {
	case !now.Before(since.Add(RetiredWindow(r.maxAge))):
		r.store.CompareAndSwap(st, nil)
		return false, nil
	case iat.After(since.Add(leeway + retiredInFlight)):
		return false, nil
	}
	return st.l.Used(ctx, key, now)
}

// CheckAlgorithm reports whether alg may sign a DPoP proof: an algorithm of
// package verify's table that is asymmetric (RFC 9449 §4.2: not MAC-based,
// never none). The message has no package prefix.
func CheckAlgorithm(alg string) error {
	if err := verify.CheckAlgorithm(alg); err != nil {
		return err
	}
	if verify.MinHMACBytes(alg) > 0 {
		return fmt.Errorf("%s is symmetric; a DPoP proof needs an asymmetric algorithm (RFC 9449 §4.2)", alg)
	}
	return nil
}

// Algorithms returns the allowlist, for the algs parameter of a DPoP
// challenge (RFC 9449 §7.1). The slice is the caller's.
func (c *Checker) Algorithms() []string { return slices.Clone(c.algs) }

// MaxAge returns the oldest iat accepted, as an age.
func (c *Checker) MaxAge() time.Duration { return c.maxAge }

// Input is one presentation of a DPoP-bound token.
type Input struct {
	// Proofs are the values of the request's DPoP headers: exactly one is
	// required.
	Proofs []string
	// Request is the original request the proof must name (htm, htu).
	// RequestErr, if set, says why it is unknown; the proof then fails.
	Request    request.Original
	RequestErr error
	// AccessToken is the token the proof accompanies, as presented: the
	// proof's ath must be its SHA-256. Required: empty fails the proof.
	AccessToken string
	// JKT is the token's cnf.jkt (verify.Result.Confirmation), "" when the
	// token is not bound to a key (which fails: binding_mismatch).
	JKT string
	// Issuer is the configured issuer that verified the token: it names
	// the jti's replay key.
	Issuer string
	// Leeway is the issuer's clock leeway: how far ahead iat may be, and
	// the jti is remembered MaxAge plus twice it plus [InFlightMargin].
	Leeway time.Duration
}

// Proof is an accepted proof.
type Proof struct {
	// Alg is the proof's alg; Thumbprint the RFC 7638 thumbprint of its jwk.
	Alg, Thumbprint string
	// JTI is its jti; IssuedAt its iat.
	JTI      string
	IssuedAt time.Time
}

// Check runs every check of the proof in in, at now, and returns the
// accepted proof or an error wrapping a class sentinel of package verify.
func (c *Checker) Check(ctx context.Context, in Input, now time.Time) (*Proof, error) {
	return c.check(ctx, &in, now, nil)
}

// Explain is [Checker.Check] that also returns each check, in order, with
// its outcome (names "dpop-…"); the steps end with the first failure.
// Details never hold the proof, the token or key material.
func (c *Checker) Explain(ctx context.Context, in Input, now time.Time) ([]verify.Step, *Proof, error) {
	tr := &trace{}
	p, err := c.check(ctx, &in, now, tr)
	return tr.steps, p, err
}

type trace struct{ steps []verify.Step }

// ok records a passed check; the detail is formatted only when tracing.
func (t *trace) ok(check, format string, a ...any) {
	if t != nil {
		t.steps = append(t.steps, verify.Step{Check: check, OK: true, Detail: fmt.Sprintf(format, a...)})
	}
}

func (t *trace) fail(check string, err error) error {
	if t != nil {
		t.steps = append(t.steps, verify.Step{Check: check, OK: false, Detail: err.Error()})
	}
	return err
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{verify.ErrInvalidDPoPProof}, a...)...)
}

// proofClaims are the claims of a proof that the checks read.
type proofClaims struct {
	jti, htm, htu, ath string
	hasAth             bool
	iat                time.Time
}

// check runs the checks of RFC 9449 §4.3 in order; each step records its
// outcome in tr and returns the error that ends the checks. The jti is
// spent last, so that only a proof that passed everything else is
// remembered.
func (c *Checker) check(ctx context.Context, in *Input, now time.Time, tr *trace) (*Proof, error) {
	// 1. One proof (§4.3 1), bounded.
	proof, err := c.checkOne(in.Proofs, tr)
	if err != nil {
		return nil, err
	}

	// 2. A well-formed JWS with JSON object header and claims (§4.3 2).
	hdr, cl, signing, sig, err := c.parse(proof)
	if err != nil {
		return nil, tr.fail("dpop-structure", err)
	}
	if tr != nil {
		tr.ok("dpop-structure", "compact JWS, header and claims are JSON objects")
	}

	// 3. Required claims (§4.3 3, §4.2).
	// A bound token is always presented with its proof (JKT comes from
	// it): the proof must carry ath, and it must name that token.
	pc, err := readClaims(cl, true)
	if err != nil {
		return nil, tr.fail("dpop-claims", err)
	}
	if tr != nil {
		tr.ok("dpop-claims", "jti, htm, htu and iat present (ath: %t)", pc.hasAth)
	}

	// 4. typ (§4.3 4).
	if err := checkTyp(&hdr, tr); err != nil {
		return nil, err
	}

	// 5. alg: asymmetric, in the allowlist (§4.3 5).
	alg, err := c.checkAlg(&hdr, tr)
	if err != nil {
		return nil, err
	}

	// 6. jwk: a public key only (§4.3 7), that fits alg.
	key, err := c.checkJWK(&hdr, alg, tr)
	if err != nil {
		return nil, err
	}

	// 7. Signature (§4.3 6).
	if err := checkSignature(alg, signing, sig, key, tr); err != nil {
		return nil, err
	}

	// 8. htm (§4.3 8).
	if err := checkHTM(in, pc.htm, tr); err != nil {
		return nil, err
	}

	// 9. htu (§4.3 9).
	if err := checkHTU(in, pc.htu, tr); err != nil {
		return nil, err
	}

	// 11. iat (§4.3 11).
	leeway := max(in.Leeway, 0)
	if err := c.checkIAT(pc.iat, now, leeway, tr); err != nil {
		return nil, err
	}

	// 12. ath (§4.3 12).
	if err := checkATH(in.AccessToken, pc.ath, tr); err != nil {
		return nil, err
	}

	// 13. The token is bound to the proof's key (§4.3 12, §6.1).
	if err := checkBinding(in.JKT, key, tr); err != nil {
		return nil, err
	}

	// 10. jti unused (§4.3 10, §11.1), last.
	if err := c.useJTI(ctx, in.Issuer, pc.jti, pc.iat, now, leeway, c.maxAge, tr); err != nil {
		return nil, err
	}
	return &Proof{Alg: alg, Thumbprint: key.Thumbprint, JTI: pc.jti, IssuedAt: pc.iat}, nil
}

// checkOne is step 1: exactly one proof, of at most MaxProofBytes. It
// returns it.
func (c *Checker) checkOne(proofs []string, tr *trace) (string, error) {
	if len(proofs) != 1 {
		return "", tr.fail("dpop-header", invalid("%d DPoP headers, want exactly one", len(proofs)))
	}
	proof := proofs[0]
	if len(proof) > c.maxBytes {
		return "", tr.fail("dpop-header", invalid("proof of %d bytes, limit %d", len(proof), c.maxBytes))
	}
	if tr != nil {
		tr.ok("dpop-header", "one DPoP header, %d bytes", len(proof))
	}
	return proof, nil
}

// checkTyp is step 4: the header's typ is dpop+jwt.
func checkTyp(hdr *header, tr *trace) error {
	typ, err := stringMember("typ", hdr.typ)
	if err != nil || !asciifold.EqualFold(typ, "dpop+jwt") {
		return tr.fail("dpop-typ", invalid("typ %s, want \"dpop+jwt\"", quote(typ)))
	}
	tr.ok("dpop-typ", "dpop+jwt")
	return nil
}

// checkAlg is step 5: the header's alg is in the allowlist. It returns it.
func (c *Checker) checkAlg(hdr *header, tr *trace) (string, error) {
	alg, err := stringMember("alg", hdr.alg)
	if err != nil || !slices.Contains(c.algs, alg) {
		return "", tr.fail("dpop-alg", invalid("alg %s is not in the allowlist %v", quote(alg), c.algs))
	}
	if tr != nil {
		tr.ok("dpop-alg", "%s is in the allowlist %v", alg, c.algs)
	}
	return alg, nil
}

// checkJWK is step 6: the header's jwk is a public key that fits alg. It
// returns the key.
func (c *Checker) checkJWK(hdr *header, alg string, tr *trace) (*cache.Key, error) {
	key, err := c.publicKey(hdr.jwk, alg)
	if err != nil {
		return nil, tr.fail("dpop-jwk", err)
	}
	if tr != nil {
		tr.ok("dpop-jwk", "public %s %s key, thumbprint %s", key.Kty, key.Crv, key.Thumbprint)
	}
	return key, nil
}

// checkSignature is step 7: the signature over signing verifies with the
// proof's key, by the standard library (verify.StandardSignature:
// crypto/ecdsa, crypto/ed25519, crypto/rsa).
func checkSignature(alg, signing string, sig []byte, key *cache.Key, tr *trace) error {
	if !verify.StandardSignature(alg, key, signing, sig) {
		return tr.fail("dpop-signature", invalid("%s signature does not verify with the proof's jwk", alg))
	}
	if tr != nil {
		tr.ok("dpop-signature", "%s verified with the proof's jwk", alg)
	}
	return nil
}

// checkHTM is step 8: the proof's htm is the original request's method.
func checkHTM(in *Input, htm string, tr *trace) error {
	if in.RequestErr != nil {
		return tr.fail("dpop-htm", invalid("the original request is unknown: %v", in.RequestErr))
	}
	if htm != in.Request.Method {
		return tr.fail("dpop-htm", invalid("htm %s, request method %s", quote(htm), quote(in.Request.Method)))
	}
	if in.Request.Overrides != "" {
		// The application may run it as another method (X-HTTP-Method-
		// Override, _method): a proof names one, and a proof for a GET
		// must not become a DELETE.
		return tr.fail("dpop-htm", invalid("the request also names the method(s) %s (an override); a proof names one", quote(in.Request.Overrides)))
	}
	if tr != nil {
		tr.ok("dpop-htm", "htm %q is the request's method", htm)
	}
	return nil
}

// checkHTU is step 9: the proof's htu is the original request's URL:
// scheme, host, port and path, without query and fragment, normalized as
// RFC 3986 §6.2.2 and §6.2.3 say.
func checkHTU(in *Input, htu string, tr *trace) error {
	if in.Request.Scheme == "" {
		return tr.fail("dpop-htu", invalid("the request's scheme is unknown: the proxy did not forward its proto header (Envoy over HTTP has none: use ext_authz over gRPC)"))
	}
	got, err := normalizeHTU(htu)
	if err != nil {
		return tr.fail("dpop-htu", err)
	}
	if want := in.Request.URL(); got != want {
		return tr.fail("dpop-htu", invalid("htu %s is not the request's %s", quote(got), quote(want)))
	}
	if tr != nil {
		tr.ok("dpop-htu", "htu is %q (without query and fragment)", got)
	}
	return nil
}

// checkIAT is step 11: iat is not older than MaxAge, nor ahead of now by
// more than leeway; and a proof that a replaced checker with a shorter
// MaxAge may have used is not older than that MaxAge.
func (c *Checker) checkIAT(iat, now time.Time, leeway time.Duration, tr *trace) error {
	// Compared as instants, not as now.Sub(iat): that saturates at about
	// 292 years, and the negation of the smallest Duration is itself, so
	// an iat that far ahead read as "not ahead" and passed.
	switch age := now.Sub(iat); {
	case !iat.After(now.Add(-c.maxAge)): // past max_age the jti's replay entry (max_age + 2 leeway + InFlightMargin after a first use at iat - leeway, on a store clock up to leeway behind) may be gone
		return tr.fail("dpop-iat", invalid("iat %s is %s old, max_age %s", iat.Format(time.RFC3339), age.Round(time.Second), c.maxAge))
	case iat.After(now.Add(leeway)):
		return tr.fail("dpop-iat", invalid("iat %s is ahead of now by more than the leeway %s", iat.Format(time.RFC3339), leeway))
	}
	for _, p := range c.priors {
		since := p.since.Load()
		if since == 0 {
			p.since.CompareAndSwap(0, now.UnixNano())
			since = p.since.Load()
		}
		if age := now.Sub(iat); age >= p.maxAge && !iat.After(time.Unix(0, since).Add(priorMargin)) {
			return tr.fail("dpop-iat", invalid("iat %s is %s old, and a proof of that time is held to the max_age before the last reload, %s (its replay entry may be gone)", iat.Format(time.RFC3339), age.Round(time.Second), p.maxAge))
		}
	}
	if tr != nil {
		tr.ok("dpop-iat", "iat %s within [now - %s, now + %s]", iat, c.maxAge, leeway)
	}
	return nil
}

// checkATH is step 12: when the proof accompanies an access token, its ath
// is the hash of that token.
func checkATH(accessToken, ath string, tr *trace) error {
	if accessToken == "" {
		// No token to bind to: Input.AccessToken is required (a proof
		// accepted without it is bound to no token at all).
		return tr.fail("dpop-ath", invalid("no access token given to check ath against (Input.AccessToken)"))
	}
	sum := sha256.Sum256(readOnlyBytes(accessToken))
	var want [43]byte
	if ath != string(base64.RawURLEncoding.AppendEncode(want[:0], sum[:])) {
		return tr.fail("dpop-ath", invalid("ath is not the hash of the access token presented"))
	}
	tr.ok("dpop-ath", "ath is the access token's SHA-256")
	return nil
}

// checkBinding is step 13: the token's cnf.jkt is the proof key's
// thumbprint.
func checkBinding(jkt string, key *cache.Key, tr *trace) error {
	switch {
	case jkt == "":
		return tr.fail("dpop-binding", fmt.Errorf("%w: the token has no cnf.jkt: it is not bound to a DPoP key", verify.ErrBindingMismatch))
	case jkt != key.Thumbprint:
		return tr.fail("dpop-binding", fmt.Errorf("%w: cnf.jkt %s is not the proof key's thumbprint %s", verify.ErrBindingMismatch, quote(jkt), key.Thumbprint))
	}
	tr.ok("dpop-binding", "cnf.jkt is the proof key's thumbprint")
	return nil
}

// useJTI is step 10: the jti of a proof with a token of issuer, issued at
// iat, was never used — in the store, nor in a store of a replaced checker
// that may have used it (asked first, read only) — and it is remembered
// from now on for MaxAge plus twice the leeway plus [InFlightMargin]. One
// leeway because iat may be that far ahead of now; the other because
// replicas sharing a store may disagree by up to the leeway (the skew it
// is there for) while the store (Redis) expires the entry on its own
// clock: a first use at a replica ahead by it leaves a replica behind
// accepting the same iat a leeway longer. The margin because a check
// judges iat at the now its request began with and reaches the store
// later, while the store's time goes on (Redis expires on its own clock; a
// concurrent check with a later now purges the memory store).
func (c *Checker) useJTI(ctx context.Context, issuer, jti string, iat, now time.Time, leeway, maxAge time.Duration, tr *trace) error {
	if next := c.successor.Load(); next != nil {
		// Retired: the successor's store is the one that decides (it asks
		// this checker's store about the proofs of its time), keeping the
		// jti for this checker's max_age when it is the longer one: a
		// request of this generation still running accepts proofs that old.
		return next.useJTI(ctx, issuer, jti, iat, now, leeway, max(maxAge, next.maxAge), tr)
	}
	key := ReplayKey(issuer, jti)
	for _, r := range c.retired {
		used, err := r.used(ctx, key, iat, now, leeway)
		if err != nil {
			return tr.fail("dpop-jti", fmt.Errorf("%w: the DPoP replay store before the last switch of stores did not answer: %w", verify.ErrKeysUnavailable, err))
		}
		if used {
			return tr.fail("dpop-jti", ErrReplayed) // the same answer as the store's own
		}
	}
	ttl := max(maxAge, c.maxAge) + 2*leeway + InFlightMargin
	fresh, err := c.replay.Use(ctx, key, ttl, now)
	if err != nil {
		return tr.fail("dpop-jti", fmt.Errorf("%w: the DPoP replay store did not answer: %w", verify.ErrKeysUnavailable, err))
	}
	if !fresh {
		return tr.fail("dpop-jti", ErrReplayed)
	}
	if err := c.handOff(ctx, key, ttl, leeway, now); err != nil {
		return tr.fail("dpop-jti", err)
	}
	if tr != nil {
		tr.ok("dpop-jti", "jti unused; remembered for %s", ttl)
	}
	return nil
}

// handOff records key, which c's own store has just taken as fresh, in
// the store of each checker that replaced c since (RetireTo), when it is
// another one. A check of a successor asks c's store only to read it
// ([retired.used]): one that asked while this check was still on its way
// to c's store found nothing and recorded the proof in its own store,
// and this check, having found c's store empty too, would be a second
// fresh use of one proof. Recorded in the successor's store as well, one
// of the two finds the other's entry. It returns nil, [ErrReplayed], or
// a "could not decide" error when a successor's store does not answer.
func (c *Checker) handOff(ctx context.Context, key [32]byte, ttl, leeway time.Duration, now time.Time) error {
	next := c.successor.Load()
	if next == nil {
		return nil
	}
	done := []ReplayStore{c.replay}
	for ; next != nil; next = next.successor.Load() {
		if slices.Contains(done, next.replay) {
			continue
		}
		done = append(done, next.replay)
		fresh, err := next.replay.Use(ctx, key, max(ttl, next.maxAge+2*leeway+InFlightMargin), now)
		if err != nil {
			return fmt.Errorf("%w: the DPoP replay store after the last switch of stores did not answer: %w", verify.ErrKeysUnavailable, err)
		}
		if !fresh {
			return ErrReplayed
		}
	}
	return nil
}

// ReplayKey is the replay store's key of a jti used with a token of
// issuer: SHA-256 over both, each length-prefixed, so that no pair of
// (issuer, jti) maps to another's key and the store never holds the jti.
func ReplayKey(issuer, jti string) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, s := range [...]string{issuer, jti} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// shownHTU is an htu refused before it parsed, as an error may show it:
// without its query and fragment, as the request's are kept out of its
// errors (request.FromRequest), and without the user information of its
// authority, as a parsed htu is refused without showing it. The message
// is the rejection log line's detail, and a query carries what clients
// put there (an OAuth code, a signed URL's signature, a token), user
// information a password.
func shownHTU(htu string) string {
	if i := strings.IndexAny(htu, "?#"); i >= 0 {
		htu = htu[:i]
	}
	// The authority follows the first "//" that no '/' precedes (after a
	// scheme, or at the start), up to the next '/'; its user information
	// ends at its last '@', as url.Parse reads it.
	i := strings.Index(htu, "//")
	if i < 0 || strings.Contains(htu[:i], "/") {
		return htu
	}
	auth := htu[i+2:]
	if j := strings.IndexByte(auth, '/'); j >= 0 {
		auth = auth[:j]
	}
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		return htu[:i+2] + htu[i+2+at+1:]
	}
	return htu
}

// normalizeHTU returns htu as scheme://host[:port]/path the way the
// original request is compared (request.Original.URL: RFC 3986 §6.2.2 and
// §6.2.3, so a non-default port is kept and a default one dropped; path
// normalized), without its query and fragment.
func normalizeHTU(htu string) (string, error) {
	u, err := url.Parse(htu)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return "", invalid("htu %s (query, fragment and user information not shown) is not an absolute http(s) URI", quote(shownHTU(htu)))
	}
	scheme := asciifold.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", invalid("htu scheme %s is not http or https", quote(u.Scheme))
	}
	if u.User != nil {
		return "", invalid("htu holds user information")
	}
	// The host rule every request is held to (FromParts), and a host at
	// all: one no request can name ("https://." and "http://:" read as the
	// empty host, "a%20b" as "a b") never matches, and is refused as what
	// it is rather than normalized into a URL that no longer parses.
	host := request.NormalizeHost(u.Host)
	if err := request.CheckHost(u.Host); err != nil || host == "" {
		return "", invalid("htu host %s is no host a request can name", quote(u.Host))
	}
	p, err := request.NormalizePath(request.RawPath(u)) // as sent, as the request's path is
	if err != nil {
		return "", invalid("htu path: %v", err)
	}
	return request.Original{Scheme: scheme, Host: host, Port: u.Port(), Path: p}.URL(), nil
}
