package verify

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/jwksverify/jwksverify/cache"
)

// Verifier checks tokens for a fixed set of issuers. It is safe for
// concurrent use; Verify never parses a key and never blocks on the network
// except for the bounded unknown-kid refresh of the token's own issuer.
//
// Signatures are checked on the pre-parsed key, never with jwt.Parse:
// jwt.Parse decodes the claims into a map[string]any (tens of allocations per
// token, numbers rounded through float64) and runs its own validation, where
// the verifier needs the exact claim bytes, its own check order and a handful
// of allocations per token. HS* and EdDSA use golang-jwt's
// SigningMethod.Verify; RS*, PS* and ES* use the prepared verifiers, held to
// crypto/rsa and crypto/ecdsa by a cross-check, or those packages themselves
// (crypto.go).
type Verifier struct {
	opts          Options
	issuers       []*issuer
	introspectors []*issuer // the issuers with an Introspector, in order
	router        *router
	now           func() time.Time
	b64           *base64.Encoding
	maxTokenBytes int
	maxKidless    int

	headers headerCache
	tokens  *tokenCache // nil when the token cache is off
	// owned is set when tokens is shared (Options.Cache): a cached verdict
	// answers only when its issuer is one of this verifier's.
	owned  *issuerSet
	tracer oteltrace.Tracer // nil: no spans
	sig    signer           // the RS*, PS* and ES* signature step (crypto.go)

	// onAttempt, if set, is called before each signature check (tests count
	// kid-less attempts with it).
	onAttempt func(*cache.Key)
}

// Bounds of the options [New] accepts (zero still means the default).
const (
	MinMaxTokenBytes, MaxMaxTokenBytes = 64, 1 << 20
	// MaxLeeway bounds an issuer's Leeway.
	MaxLeeway = 10 * time.Minute
	// MaxCacheEntries and MaxCacheBytes bound [TokenCacheOptions].
	MaxCacheEntries, MaxCacheBytes = 10_000_000, 1 << 40
)

// CheckOptions reports whether the bounds of opts are ones [New] accepts
// (MaxTokenBytes, MaxKidless, TokenCache, CrossCheckRate, each issuer's
// Leeway and Audiences): an error wrapping [ErrInvalidOptions] that names
// the field first if not. It needs no Keys: a command checks its
// configuration with it before any fetch.
func CheckOptions(opts Options) error {
	invalid := invalidOption
	switch n, c := opts.MaxTokenBytes, opts.TokenCache; {
	case n != 0 && (n < MinMaxTokenBytes || n > MaxMaxTokenBytes):
		return invalid("MaxTokenBytes", "%d is out of range [%d, %d]", n, MinMaxTokenBytes, MaxMaxTokenBytes)
	case opts.MaxKidless < 0:
		return invalid("MaxKidless", "negative")
	case c.MaxEntries < 0 || c.MaxEntries > MaxCacheEntries:
		return invalid("TokenCache.MaxEntries", "%d is out of range [0, %d]", c.MaxEntries, MaxCacheEntries)
	case c.MaxBytes < 0 || c.MaxBytes > MaxCacheBytes:
		return invalid("TokenCache.MaxBytes", "%d is out of range [0, %d]", c.MaxBytes, int64(MaxCacheBytes))
	case math.IsNaN(opts.CrossCheckRate) || opts.CrossCheckRate > 1:
		return invalid("CrossCheckRate", "%v is above 1 (1 checks every accept)", opts.CrossCheckRate)
	}
	for i, is := range opts.Issuers {
		if is.MaxLifetime < 0 {
			return invalid(fmt.Sprintf("Issuers[%d].MaxLifetime", i), "negative")
		}
		if is.Leeway > MaxLeeway {
			return invalid(fmt.Sprintf("Issuers[%d].Leeway", i), "%s is above the maximum of %s", is.Leeway, MaxLeeway)
		}
		if j := slices.Index(is.Audiences, ""); j >= 0 {
			return invalid(fmt.Sprintf("Issuers[%d].Audiences", i), "entry %d is empty", j)
		}
	}
	return nil
}

// New validates opts ([CheckOptions]), applies defaults and returns a
// Verifier. It also rejects no issuers, duplicate or empty issuer strings,
// an issuer without Keys, unsupported algorithms (including "none") and
// SkipIssuerCheck beside other issuers.
func New(opts Options) (*Verifier, error) {
	if len(opts.Issuers) == 0 {
		return nil, errors.New("verify: at least one issuer is required")
	}
	if err := CheckOptions(opts); err != nil {
		return nil, err
	}
	if opts.MaxTokenBytes == 0 {
		opts.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if opts.MaxKidless == 0 {
		opts.MaxKidless = DefaultMaxKidless
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	v := &Verifier{
		now:           opts.Now,
		b64:           base64.RawURLEncoding.Strict(),
		maxTokenBytes: opts.MaxTokenBytes,
		maxKidless:    opts.MaxKidless,
	}
	v.sig = newSigner(opts, defaultCrypto())
	// A reload that turns a prepared verifier off (StandardCrypto), or
	// that has every accept of one cross-checked (CrossCheckRate 1), carries
	// no issuer over: the verdicts cached under the predecessor include that
	// verifier's unchecked accepts, which the operator has just stopped
	// trusting.
	carry := opts.Previous != nil && !v.sig.prepared.drops(opts.Previous.sig.prepared) &&
		!v.sig.checksMore(&opts.Previous.sig)
	compiled := make([]*issuer, 0, len(opts.Issuers))
	for _, ic := range opts.Issuers {
		is, err := compile(ic)
		if err != nil {
			return nil, err
		}
		compiled = append(compiled, is)
	}
	// Nor does a reload that may route a cached token to another issuer:
	// their cached verdicts would answer under the old issuer's rules.
	carry = carry && !reroutes(opts.Previous.issuers, compiled)
	cfgs := make([]Issuer, 0, len(opts.Issuers))
	for _, is := range compiled {
		if carry {
			is = opts.Previous.carry(is)
		}
		v.issuers = append(v.issuers, is)
		if is.cfg.Introspector != nil {
			v.introspectors = append(v.introspectors, is)
		}
		cfgs = append(cfgs, is.cfg)
	}
	r, err := newRouter(v.issuers)
	if err != nil {
		return nil, err
	}
	v.router = r
	opts.Issuers = cfgs
	opts.IndexClaims = slices.Clone(opts.IndexClaims)
	switch {
	case opts.Cache != nil:
		v.tokens, v.owned = opts.Cache.c, newIssuerSet(v.issuers)
		v.sig.onMismatch = v.tokens.clear
	case opts.TokenCache.MaxEntries > 0:
		opts.TokenCache = opts.TokenCache.withDefaults()
		v.tokens = newTokenCache(opts.TokenCache, true)
		v.sig.onMismatch = v.tokens.clear
	}
	v.tracer = opts.Tracer
	if p := opts.Previous; p != nil {
		// The cross-check's counters continue (they are exported as
		// counters), and a disagreement seen by the predecessor, before or
		// after this verifier is swapped in, keeps the prepared verifiers
		// off: a reload must not turn them back on (crossState).
		v.sig.cross.st = p.sig.cross.st
		var drop *func()
		if v.tokens != nil {
			f := v.tokens.clear
			drop = &f
		}
		v.sig.cross.st.newest.Store(drop)
	}
	opts.Previous = nil // not kept: a chain of reloads must not pin every old verifier
	v.opts = opts
	return v, nil
}

// reroutes reports whether a token that old routed to an issuer that next
// still has may route to another one under next (router.find: an exact
// name first, then the first {tenantid} template it matches or has the
// shape of, then the SPIFFE trust domain of its sub). That happens when
// next adds or reorders a template or a trust domain (an earlier template
// takes tokens a later one held, a template added takes its iss's tokens
// from a trust domain), or
// adds an exact name while it has a template or a trust domain (the name
// takes the tokens of its iss from them). Removing issuers, or adding an
// exact name beside exact names only, routes no cached token elsewhere:
// a name that was not configured had no verdict to cache.
func reroutes(old, next []*issuer) bool {
	key := func(is *issuer) string {
		return fmt.Sprintf("%q %t %q %t", is.cfg.Issuer, is.template, is.spiffe, is.cfg.SkipIssuerCheck)
	}
	var oldShaped, nextShaped []string // templates and trust domains, in order
	oldExact := make(map[string]bool)
	for _, is := range old {
		if is.template || is.spiffe != "" {
			oldShaped = append(oldShaped, key(is))
		} else {
			oldExact[key(is)] = true
		}
	}
	addedExact := false
	for _, is := range next {
		if is.template || is.spiffe != "" {
			nextShaped = append(nextShaped, key(is))
		} else if !oldExact[key(is)] {
			addedExact = true
		}
	}
	return !subsequence(nextShaped, oldShaped) || (addedExact && len(nextShaped) > 0)
}

// subsequence reports whether sub is seq with some elements removed, the
// others in their order.
func subsequence(sub, seq []string) bool {
	for _, k := range sub {
		i := slices.Index(seq, k)
		if i < 0 {
			return false
		}
		seq = seq[i+1:]
	}
	return true
}

// carry returns v's compiled issuer equal to is, when it has one, else is:
// the verdicts cached for it stay valid.
func (v *Verifier) carry(is *issuer) *issuer {
	for _, old := range v.issuers {
		if sameIssuer(old.cfg, is.cfg) {
			return old
		}
	}
	return is
}

// Verify checks token and returns its verified contents, or a [*Error]
// wrapping one of the class sentinels. It is VerifyAt with the verifier's
// clock ([Options.Now]). The returned Result may be shared with other
// callers (token cache) and must not be modified. Verify blocks only for an
// unknown kid, while the issuer's Refresher refreshes (bounded by ctx).
func (v *Verifier) Verify(ctx context.Context, token string) (*Result, error) {
	return v.VerifyAt(ctx, token, v.now())
}

// VerifyAt is [Verifier.Verify] judged at the instant now instead of the
// verifier's clock: exp and nbf, the key set's staleness, the negative-kid
// memory and the token cache's entries are all compared with now. A caller
// that reads its clock once per request (the server) passes that reading;
// the CLI passes --now. It is safe for concurrent use.
func (v *Verifier) VerifyAt(ctx context.Context, token string, now time.Time) (*Result, error) {
	return v.VerifyAmong(ctx, token, now, nil)
}

// VerifyAmong is [Verifier.VerifyAt] with the issuers an opaque token may
// be introspected at narrowed to issuers (configured [Issuer.Issuer]
// names; empty means every issuer): an authorization policy passes its
// issuers list. A token that is not a compact JWS is opaque: it is asked at
// the one issuer among them that has an [Issuer.Introspector]; with none or
// several it is unknown_issuer. When no issuer has an Introspector at all,
// such a token is malformed, as before introspection existed. issuers does
// not narrow the issuer of a JWT, which its iss claim names: the caller
// (the policy) judges Result.ConfiguredIssuer itself. It is safe for
// concurrent use and blocks for at most one introspection call or one
// unknown-kid refresh, bounded by ctx.
func (v *Verifier) VerifyAmong(ctx context.Context, token string, now time.Time, issuers []string) (*Result, error) {
	if v.tracer != nil {
		return v.verifyTraced(ctx, token, now, issuers, nil)
	}
	res, _, err := v.verifyCached(ctx, token, now, issuers, nil)
	return res, err
}

// verifyCached is VerifyAmong without the span; hit reports that the token
// cache answered. in, when not nil, makes it an ID token's verification
// with those inputs (idtoken.go): the cache answers it only with an ID
// token's verdict, and the inputs are checked on every hit.
func (v *Verifier) verifyCached(ctx context.Context, token string, now time.Time, among []string, in *IDTokenChecks) (_ *Result, hit bool, _ error) {
	if v.tokens == nil || len(token) > v.maxTokenBytes || (in == nil && len(v.introspectors) > 0 && !v.compactJWS(token)) {
		// Opaque answers are cached by their introspector, not here.
		res, _, _, err := v.verify(ctx, token, now, nil, among, in)
		return res, false, err
	}
	kind := kindOf(in)
	r, id := v.tokens.get(token, now, v.owned, kind)
	if r != nil {
		if in != nil {
			is := v.issuerNamed(r.ConfiguredIssuer)
			if is == nil {
				// An issuer carried over by name only: never answer it.
				r = nil
			} else if err := checkIDInputs(r, is, in, now, nil); err != nil {
				return nil, false, &Error{Class: Class(err), Issuer: is.cfg.Issuer, Kid: r.Kid, Err: err}
			}
		}
		if r != nil {
			return r, true, nil
		}
	}
	res, is, key, err := v.verify(ctx, token, now, nil, among, in)
	if err != nil {
		return nil, false, err
	}
	return v.tokens.put(id, res, is, key, now, kind), false, nil
}

// Explain runs the same checks as Verify and also returns each check in order
// with its outcome, for people debugging a rejected token. The steps end with
// the first failing check. Explain neither reads nor fills the token cache.
// Step details never contain the token or key material. It is ExplainAt with
// the verifier's clock.
func (v *Verifier) Explain(ctx context.Context, token string) ([]Step, *Result, error) {
	return v.ExplainAt(ctx, token, v.now())
}

// ExplainAt is [Verifier.Explain] judged at the instant now (see
// [Verifier.VerifyAt]).
func (v *Verifier) ExplainAt(ctx context.Context, token string, now time.Time) ([]Step, *Result, error) {
	tr := &trace{}
	res, _, _, err := v.verify(ctx, token, now, tr, nil, nil)
	return tr.steps, res, err
}

// Now reads the verifier's clock ([Options.Now], or time.Now), the one
// [Verifier.Verify] judges at. A caller that decides at one instant per
// request (the server) reads it once and passes it to
// [Verifier.VerifyAt]. It is safe for concurrent use.
func (v *Verifier) Now() time.Time { return v.now() }

// MaxTokenBytes returns the size bound of a token: [Options.MaxTokenBytes],
// or its default.
func (v *Verifier) MaxTokenBytes() int { return v.maxTokenBytes }

// Issuers returns the configured issuers with defaults applied (Algorithms
// filled in, Leeway and RequiredClaims set). The slices are shared with the
// verifier: callers must not modify them.
func (v *Verifier) Issuers() []Issuer { return slices.Clone(v.opts.Issuers) }

// CacheStats returns the verified-token cache's counters (all zero when the
// cache is off; a shared cache's, [Options.Cache], since it was made). It
// is safe for concurrent use.
func (v *Verifier) CacheStats() CacheStats {
	if v.tokens == nil {
		return CacheStats{}
	}
	return v.tokens.stats()
}

// trace collects the steps of Explain. A nil *trace (Verify) records nothing;
// every call site checks for nil first so that no detail is formatted on the
// hot path.
type trace struct{ steps []Step }

func (t *trace) add(check string, ok bool, detail string) {
	t.steps = append(t.steps, Step{Check: check, OK: ok, Detail: detail})
}

// fail records a failing step and returns err.
func (t *trace) fail(check string, err error) error {
	if t != nil {
		t.add(check, false, err.Error())
	}
	return err
}

// attempt is what the checks of one token learnt before one failed, for
// the [*Error]: the token's kid and the claims that name its issuer, and the
// issuer routing chose. It lives on the caller's stack.
type attempt struct {
	kid          string
	iss, tid     string
	sub          string
	hasIss       bool
	parsed       bool    // the header and claims were read
	routed       bool    // step 5 ran
	routedIssuer *issuer // its answer: the issuer, or the template iss fits
	upstream     string  // why an introspection gave no answer (operator only)
}

// verify runs every check in the order of docs/ARCHITECTURE.md and returns
// the result, or a *Error. On success it also returns the issuer and the
// key, for the token cache. in, when not nil, makes it an ID token's
// verification with those inputs.
func (v *Verifier) verify(ctx context.Context, token string, now time.Time, tr *trace, among []string, in *IDTokenChecks) (*Result, *issuer, *cache.Key, error) {
	var at attempt
	res, is, key, err := v.check(ctx, token, now, tr, &at, among, in)
	if err == nil {
		return res, is, key, nil
	}
	e := &Error{Class: Class(err), Kid: at.kid, Err: err}
	named := at.routedIssuer
	if !at.routed && at.parsed {
		// A check before routing failed (alg none, crit): name the issuer
		// the claims point at all the same, so that the rejection is
		// counted under it.
		named, _ = v.router.find(at.iss, at.hasIss, at.tid, at.sub)
	}
	if named != nil {
		e.Issuer = named.cfg.Issuer
	}
	e.Hint = v.hint(e.Class, &at, named, kindOf(in))
	if tr != nil && e.Hint != "" && len(tr.steps) > 0 {
		// --explain is read by the operator: the failing row says it too.
		last := &tr.steps[len(tr.steps)-1]
		last.Detail += "; hint: " + e.Hint
	}
	return nil, nil, nil, e
}

// hint is the [Error.Hint] of a rejection of class, whose attempt at
// learnt the token's iss and named the issuer (nil: none), of a token
// asked to be of kind. It runs only for rejected tokens.
func (v *Verifier) hint(class string, at *attempt, named *issuer, kind tokenKind) string {
	switch class {
	case "keys_unavailable":
		return at.upstream
	case "wrong_audience":
		if named == nil {
			return ""
		}
		if kind == kindID {
			return "client IDs of " + quote(named.cfg.Issuer) + " (id_token.client_ids): " + quoteList(named.cfg.IDToken.ClientIDs)
		}
		if named.cfg.Issuer == "" {
			return "accepted audiences: " + quoteList(named.cfg.Audiences)
		}
		return "configured audiences of " + quote(named.cfg.Issuer) + ": " + quoteList(named.cfg.Audiences)
	case "unknown_issuer", "wrong_issuer":
		if !at.hasIss {
			return ""
		}
		for _, is := range v.router.all {
			if near := is.cfg.Issuer; near != at.iss && !is.template && is.spiffe == "" &&
				strings.TrimSuffix(near, "/") == strings.TrimSuffix(at.iss, "/") {
				return "iss " + quote(at.iss) + " nearly matches the configured issuer " + quote(near) +
					": issuers are compared exactly, a trailing '/' included; configure the issuer as the IdP writes iss"
			}
		}
	}
	return ""
}

// check is verify without the *Error: it records in at what it learns.
// An opaque token's answer comes with a nil issuer and key: it is cached by
// its introspector, never in the token cache. Each step records its outcome
// in tr and returns the error that ends the checks.
func (v *Verifier) check(ctx context.Context, token string, now time.Time, tr *trace, at *attempt, among []string, in *IDTokenChecks) (*Result, *issuer, *cache.Key, error) {
	kind := kindOf(in)
	// 1. size
	if err := v.checkSize(token, tr); err != nil {
		return nil, nil, nil, err
	}

	// 2. structure (an opaque token goes to its introspector; an ID token
	// is never opaque)
	if kind == kindAccess && len(v.introspectors) > 0 && !v.compactJWS(token) {
		res, err := v.checkOpaque(ctx, token, now, among, tr, at)
		return res, nil, nil, err
	}
	h, payload, ps, sig, signing, cl, err := v.parse(token)
	if err != nil {
		return nil, nil, nil, tr.fail("structure", err)
	}
	at.kid, at.iss, at.hasIss, at.tid, at.sub, at.parsed = h.kid, cl.iss, cl.has(clIss), cl.tid, cl.sub, true
	if tr != nil {
		tr.add("structure", true, fmt.Sprintf("header %d bytes, claims %d bytes, signature %d bytes", len(h.raw), len(payload), len(sig)))
	}

	// 3. header
	if err := checkHeader(h, tr); err != nil {
		return nil, nil, nil, err
	}

	// 4. crit
	if err := checkCrit(h, tr); err != nil {
		return nil, nil, nil, err
	}

	// 5. issuer (for an ID token: one that accepts ID tokens)
	is, err := v.checkIssuer(&cl, tr, at)
	if err != nil {
		return nil, nil, nil, err
	}
	if kind == kindID {
		if err := is.idTokenError(); err != nil {
			return nil, nil, nil, tr.fail("issuer", err)
		}
	}

	// 6. alg
	spec, err := is.checkAlg(h, tr)
	if err != nil {
		return nil, nil, nil, err
	}

	// 7. key and 8. signature
	key, err := v.checkSignature(ctx, is, spec, h, &cl, signing, sig, now, tr)
	if err != nil {
		return nil, nil, nil, err
	}
	v.headers.remember(signing, h)

	// 8b. kind: nothing in the token says it is of another kind (before
	// any claim: a logout token is refused as one, whatever its aud)
	if err := checkKind(h, &cl, kind, tr); err != nil {
		return nil, nil, nil, err
	}

	// 9. exp
	if err := is.checkExp(&cl, now, tr); err != nil {
		return nil, nil, nil, err
	}

	// 10. nbf
	if err := is.checkNbf(&cl, now, kind != kindID, tr); err != nil { // an ID token's iat: checkIDToken, after aud
		return nil, nil, nil, err
	}

	if kind == kindID {
		return v.checkIDToken(is, h, &cl, payload, ps, key, now, tr, in)
	}

	// 11. aud
	if err := is.checkAud(&cl, tr); err != nil {
		return nil, nil, nil, err
	}

	// 12. typ
	if err := is.checkTyp(h, tr); err != nil {
		return nil, nil, nil, err
	}

	// 13. claims
	if err := is.checkClaims(&cl, ps, tr); err != nil {
		return nil, nil, nil, err
	}

	res, err := v.result(is, h, &cl, payload, ps, key, tr)
	if err != nil {
		return nil, nil, nil, err
	}
	return res, is, key, nil
}

// checkIDToken runs steps 11 to 13 of an ID token (aud against the client
// IDs; typ: not the issuer's type, which is for access tokens; claims:
// sub, exp, iat, then iat and azp), then the checks of the caller's inputs
// in.
func (v *Verifier) checkIDToken(is *issuer, h *header, cl *claims, payload []byte, ps string, key *cache.Key,
	now time.Time, tr *trace, in *IDTokenChecks) (*Result, *issuer, *cache.Key, error) {
	if err := is.checkIDAud(cl, tr); err != nil {
		return nil, nil, nil, err
	}
	if tr != nil {
		tr.add("typ", true, fmt.Sprintf("typ %s may be an ID token (the issuer's type applies to access tokens)", quote(h.typ)))
	}
	if err := is.checkIDClaims(cl, ps, now, tr); err != nil {
		return nil, nil, nil, err
	}
	res, err := v.result(is, h, cl, payload, ps, key, tr)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := checkIDInputs(res, is, in, now, tr); err != nil {
		return nil, nil, nil, err
	}
	return res, is, key, nil
}

// checkSize is step 1: token is at most MaxTokenBytes long.
func (v *Verifier) checkSize(token string, tr *trace) error {
	if len(token) > v.maxTokenBytes {
		return tr.fail("size", fmt.Errorf("%w: %d bytes, limit %d", ErrTokenTooLarge, len(token), v.maxTokenBytes))
	}
	if tr != nil {
		tr.add("size", true, fmt.Sprintf("%d bytes, limit %d", len(token), v.maxTokenBytes))
	}
	return nil
}

// checkHeader is step 3: the header names an alg, and not "none".
func checkHeader(h *header, tr *trace) error {
	if !h.hasAlg {
		return tr.fail("header", fmt.Errorf("%w: header has no alg", ErrMalformed))
	}
	if strings.EqualFold(h.alg, "none") {
		return tr.fail("header", fmt.Errorf("%w: alg %s is never accepted", ErrAlgNotAllowed, quote(h.alg)))
	}
	if tr != nil {
		d := fmt.Sprintf("alg %s, kid %s, typ %s", quote(h.alg), quote(h.kid), quote(h.typ))
		if h.ignored != "" {
			d += "; ignored (never followed): " + h.ignored
		}
		tr.add("header", true, d)
	}
	return nil
}

// checkCrit is step 4: the header has no crit (no extension is understood).
func checkCrit(h *header, tr *trace) error {
	if h.crit {
		return tr.fail("crit", fmt.Errorf("%w: no crit extension is understood", ErrUnsupportedCrit))
	}
	if tr != nil {
		tr.add("crit", true, "no crit header")
	}
	return nil
}

// checkIssuer is step 5: it routes the claims c to their issuer, records
// the answer in at (the issuer, or the template iss fits, even on an
// error), and holds a JWT-SVID's sub to the issuer's trust domain.
func (v *Verifier) checkIssuer(c *claims, tr *trace, at *attempt) (*issuer, error) {
	is, err := v.router.route(c.iss, c.has(clIss), c.tid, c.sub)
	at.routed, at.routedIssuer = true, is
	if err != nil {
		return nil, tr.fail("issuer", err)
	}
	if is.spiffe != "" && !is.ownsSubject(c.sub) {
		// A JWT-SVID names its workload in sub, a SPIFFE ID of the trust
		// domain whose keys sign it; an iss equal to the trust domain's ID
		// does not stand in for that.
		return nil, tr.fail("issuer", fmt.Errorf("%w: sub %s is not a SPIFFE ID of trust domain %s", ErrWrongIssuer, quote(c.sub), quote(is.spiffe)))
	}
	if tr != nil {
		if is.cfg.SkipIssuerCheck {
			tr.add("issuer", true, "not checked (SkipIssuerCheck); iss "+quote(c.iss))
		} else {
			tr.add("issuer", true, fmt.Sprintf("iss %s routes to issuer %s", quote(c.iss), quote(is.cfg.Issuer)))
		}
	}
	return is, nil
}

// checkAlg is step 6: the header's alg is in the issuer's allowlist. It
// returns the algorithm.
func (is *issuer) checkAlg(h *header, tr *trace) (*algSpec, error) {
	spec := lookupAlg(h.alg)
	if spec == nil || is.algs&spec.bit == 0 {
		return nil, tr.fail("alg", fmt.Errorf("%w: alg %s is not in the allowlist %v", ErrAlgNotAllowed, quote(h.alg), is.cfg.Algorithms))
	}
	if tr != nil {
		tr.add("alg", true, fmt.Sprintf("%s is in the allowlist %v", spec.name, is.cfg.Algorithms))
	}
	return spec, nil
}

// checkExp is step 9: an exp of the claims c is after now, less the
// leeway; an absent exp passes unless the issuer requires it or bounds
// the lifetime (MaxLifetime).
func (is *issuer) checkExp(c *claims, now time.Time, tr *trace) error {
	switch {
	case c.has(clExp):
		if !now.Add(-is.leeway).Before(c.exp) {
			return tr.fail("exp", fmt.Errorf("%w: exp %s, now %s, leeway %s", ErrExpired,
				c.exp.Format(time.RFC3339), now.UTC().Format(time.RFC3339), is.leeway))
		}
		iat := time.Time{}
		if c.has(clIat) {
			iat = c.iat
		}
		if err := is.checkLifetime(c.exp, iat, now); err != nil {
			return tr.fail("exp", err)
		}
		if tr != nil {
			tr.add("exp", true, fmt.Sprintf("exp %s, now %s, leeway %s", c.exp.Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano), is.leeway))
		}
	case is.required&clExp != 0:
		return tr.fail("exp", fmt.Errorf("%w: exp is required", ErrMissingClaim))
	case is.cfg.MaxLifetime > 0:
		// A token that never expires outlives any bound, and every
		// revocation entry that names it.
		return tr.fail("exp", fmt.Errorf("%w: no exp: the token never expires, above max_lifetime %s", ErrLifetimeExceeded, is.cfg.MaxLifetime))
	case tr != nil:
		tr.add("exp", true, "absent, not required")
	}
	return nil
}

// checkLifetime holds exp − iat (exp − now without iat) to the issuer's
// MaxLifetime: part of step 9.
func (is *issuer) checkLifetime(exp, iat, now time.Time) error {
	limit := is.cfg.MaxLifetime
	if limit <= 0 || exp.IsZero() {
		return nil
	}
	from, what := iat, "iat"
	if from.IsZero() {
		from, what = now, "now (no iat)"
	}
	if d := exp.Sub(from); d > limit {
		return fmt.Errorf("%w: exp is %s after %s, above max_lifetime %s", ErrLifetimeExceeded, d.Round(time.Second), what, limit)
	}
	return nil
}

// checkNbf is step 10: an nbf of the claims c is not after now, plus the
// leeway; with iat, nor is an iat (a token issued in the future would
// escape every issued_before revocation, and max_lifetime measures from
// iat).
func (is *issuer) checkNbf(c *claims, now time.Time, iat bool, tr *trace) error {
	if iat && c.has(clIat) && c.iat.After(now.Add(is.leeway)) {
		return tr.fail("iat", fmt.Errorf("%w: iat %s is ahead of now %s, leeway %s", ErrNotYetValid,
			c.iat.Format(time.RFC3339), now.UTC().Format(time.RFC3339), is.leeway))
	}
	if c.has(clNbf) {
		if c.nbf.After(now.Add(is.leeway)) {
			return tr.fail("nbf", fmt.Errorf("%w: nbf %s, now %s, leeway %s", ErrNotYetValid,
				c.nbf.Format(time.RFC3339), now.UTC().Format(time.RFC3339), is.leeway))
		}
		if tr != nil {
			tr.add("nbf", true, fmt.Sprintf("nbf %s, now %s, leeway %s", c.nbf.Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano), is.leeway))
		}
	} else if tr != nil {
		tr.add("nbf", true, "absent")
	}
	return nil
}

// checkAud is step 11: when the issuer has audiences, the claims c hold
// one of them; and aud names no client ID of the issuer's id_token that is
// not also one of its audiences (such a token is an ID token).
func (is *issuer) checkAud(c *claims, tr *trace) error {
	auds := is.cfg.Audiences
	if len(auds) > 0 {
		if err := is.audienceError(c); err != nil {
			return tr.fail("aud", err)
		}
	}
	if id, ok := is.clientAudience(c); ok {
		// An aud naming the relying party's client ID is an ID token's,
		// never an access token's: without audiences (aud tells nothing
		// else of an access token), and beside them too, for an ID token
		// may hold several audiences (OIDC Core 2), the API's among them.
		// An operator whose API is also a client lists the client ID in
		// audiences.
		return tr.fail("aud", fmt.Errorf("%w: aud %s names the client ID %s of id_token.client_ids, not one of the audiences: an ID token, never an access token",
			ErrWrongType, quoteList(c.audList()), quote(id)))
	}
	if tr != nil {
		if len(auds) > 0 {
			tr.add("aud", true, fmt.Sprintf("aud %s has one of %q", quoteList(c.audList()), auds))
		} else {
			tr.add("aud", true, "not checked (no audiences configured)")
		}
	}
	return nil
}

// clientAudience returns a client ID of the issuer's id_token that the
// claims c's aud names and that is not one of the issuer's audiences, and
// whether there is one.
func (is *issuer) clientAudience(c *claims) (string, bool) {
	for _, id := range is.cfg.IDToken.ClientIDs {
		if slices.Contains(is.cfg.Audiences, id) {
			continue
		}
		if c.audOne && c.aud1 == id || !c.audOne && slices.Contains(c.aud, id) {
			return id, true
		}
	}
	return "", false
}

// checkTyp is step 12: when the issuer has a type, the header's typ is it.
func (is *issuer) checkTyp(h *header, tr *trace) error {
	if is.typ != "" {
		if !h.hasTyp || !typeMatches(is.typ, h.typ) {
			return tr.fail("typ", fmt.Errorf("%w: typ %s, want %s", ErrWrongType, quote(h.typ), quote(is.cfg.Type)))
		}
		if tr != nil {
			tr.add("typ", true, fmt.Sprintf("typ %s matches %s", quote(h.typ), quote(is.cfg.Type)))
		}
	} else if is.spiffe != "" && h.hasTyp && !typeMatches("jwt", h.typ) && !typeMatches("jose", h.typ) {
		// JWT-SVID §2.3: typ, when set, is JWT or JOSE (go-spiffe refuses
		// any other).
		return tr.fail("typ", fmt.Errorf("%w: typ %s is not JWT or JOSE (JWT-SVID)", ErrWrongType, quote(h.typ)))
	} else if tr != nil {
		tr.add("typ", true, "not checked (no type configured)")
	}
	return nil
}

// checkClaims is step 13: the claims c, whose JSON is ps, hold every
// claim the issuer requires.
func (is *issuer) checkClaims(c *claims, ps string, tr *trace) error {
	if err := is.missingClaim(c, ps); err != nil {
		return tr.fail("claims", err)
	}
	if tr != nil {
		required := is.cfg.RequiredClaims
		if is.required&clExp != 0 && !slices.Contains(required, "exp") {
			// A SPIFFE issuer's exp, required whatever the list says.
			required = append(slices.Clip(required), "exp")
		}
		tr.add("claims", true, fmt.Sprintf("required %q present", required))
	}
	return nil
}

// result is the Result of a token that passed every check: its header h,
// its claims c (whose JSON is payload, as a string ps), the key that
// verified it. A cnf it cannot decode fails the claims step.
func (v *Verifier) result(is *issuer, h *header, c *claims, payload []byte, ps string, key *cache.Key, tr *trace) (*Result, error) {
	// One allocation holds the Result and a single-string audience.
	box := &resultBox{Result: Result{
		Issuer:           c.iss,
		ConfiguredIssuer: is.cfg.Issuer,
		Kid:              h.kid,
		Alg:              h.alg,
		Type:             h.typ,
		Header:           h.raw,
		Claims:           payload,
		Subject:          c.sub,
		Audience:         c.aud,
		ID:               c.jti,
		Thumbprint:       key.Thumbprint,
	}}
	res := &box.Result
	if is.spiffe != "" {
		// A JWT-SVID's identity is its trust domain (the sub routed it
		// there); its iss, checked by nothing, must not name another
		// issuer to what reads Result.Issuer (Envoy's dynamic metadata,
		// /v1/verify's "issuer").
		res.Issuer = is.cfg.Issuer
	}
	if c.audOne {
		box.aud[0] = c.aud1
		res.Audience = box.aud[:]
	}
	c.setTimes(res)
	if len(is.cfg.ExtractClaims) > 0 {
		res.Extracted = extract(ps, is.cfg.ExtractClaims)
	}
	if names := v.opts.IndexClaims; len(names) > 0 {
		res.idxNames, res.idxSpans = names, make([]claimSpan, len(names))
		scanClaims(ps, names, res.idxSpans)
	}
	if c.cnf != "" {
		cnf, err := decodeConfirmation(c.cnf)
		if err != nil {
			return nil, tr.fail("claims", fmt.Errorf("%w: cnf: %w", ErrMalformed, err))
		}
		res.Confirmation = cnf
	}
	return res, nil
}

// audienceError is the refusal of the claims c (nil: none) by an issuer
// with audiences: aud absent, or holding none of them. The message names
// the token's aud, never the configured audiences (it reaches callers).
func (is *issuer) audienceError(c *claims) error {
	if !c.has(clAud) {
		return fmt.Errorf("%w: aud is required", ErrMissingClaim)
	}
	if !c.audHas(is.cfg.Audiences) {
		return fmt.Errorf("%w: aud %s has none of the configured audiences", ErrWrongAudience, quoteList(c.audList()))
	}
	return nil
}

// missingClaim is the refusal of the claims c, whose JSON is ps, for the
// first required claim they lack; nil when they hold every one.
func (is *issuer) missingClaim(c *claims, ps string) error {
	if missing := is.required &^ c.present; missing != 0 {
		for _, name := range is.cfg.RequiredClaims {
			if b := registeredBit(name); b != 0 && missing&b != 0 {
				return fmt.Errorf("%w: %s is required", ErrMissingClaim, name)
			}
		}
	}
	for _, name := range is.others {
		if !hasMember(ps, name) {
			return fmt.Errorf("%w: %s is required", ErrMissingClaim, quote(name))
		}
	}
	return nil
}

// parse splits and decodes token: three base64url segments (strict, no
// padding, no white space), a header and a claims set that are JSON objects.
func (v *Verifier) parse(token string) (h *header, payload []byte, ps string, sig []byte, signing string, cl claims, err error) {
	d1 := strings.IndexByte(token, '.')
	if d1 < 0 {
		return nil, nil, "", nil, "", cl, fmt.Errorf("%w: not three dot-separated segments", ErrMalformed)
	}
	d2 := strings.IndexByte(token[d1+1:], '.')
	if d2 < 0 {
		return nil, nil, "", nil, "", cl, fmt.Errorf("%w: not three dot-separated segments", ErrMalformed)
	}
	d2 += d1 + 1
	if strings.IndexByte(token[d2+1:], '.') >= 0 {
		return nil, nil, "", nil, "", cl, fmt.Errorf("%w: more than three segments (JWE is not supported)", ErrMalformed)
	}
	// base64's decoder skips CR and LF; a token must not carry them.
	if strings.IndexByte(token, '\n') >= 0 || strings.IndexByte(token, '\r') >= 0 {
		return nil, nil, "", nil, "", cl, fmt.Errorf("%w: line break in token", ErrMalformed)
	}
	hseg := token[:d1]
	if h = v.headers.get(hseg); h == nil {
		raw, err := v.b64.DecodeString(hseg)
		if err != nil {
			return nil, nil, "", nil, "", cl, fmt.Errorf("%w: header is not base64url: %w", ErrMalformed, err)
		}
		if h, err = parseHeader(raw); err != nil {
			return nil, nil, "", nil, "", cl, fmt.Errorf("%w: header: %w", ErrMalformed, err)
		}
		// Remembered only once a key verified it (remember): a header
		// anyone can send must not push the issuers' headers out.
	}
	// The claims and the signature share one allocation; the claims slice
	// is capped so that an append to Result.Claims can never reach the
	// signature bytes.
	pseg, sseg := token[d1+1:d2], token[d2+1:]
	np := v.b64.DecodedLen(len(pseg))
	buf := make([]byte, np+v.b64.DecodedLen(len(sseg)))
	n, err := v.b64.Decode(buf[:np], []byte(pseg))
	if err != nil {
		return nil, nil, "", nil, "", cl, fmt.Errorf("%w: claims are not base64url: %w", ErrMalformed, err)
	}
	payload = buf[:n:n]
	n, err = v.b64.Decode(buf[np:], []byte(sseg))
	if err != nil {
		return nil, nil, "", nil, "", cl, fmt.Errorf("%w: signature is not base64url: %w", ErrMalformed, err)
	}
	sig = buf[np : np+n : np+n]
	ps = string(payload)
	if err := parseClaims(ps, &cl); err != nil {
		return nil, nil, "", nil, "", cl, fmt.Errorf("%w: claims: %w", ErrMalformed, err)
	}
	return h, payload, ps, sig, token[:d2], cl, nil
}

// checkSignature finds the key (step 7) and checks the signature with it
// (step 8). It returns the key that verified the token.
func (v *Verifier) checkSignature(ctx context.Context, is *issuer, spec *algSpec, h *header, cl *claims,
	signing string, sig []byte, now time.Time, tr *trace) (*cache.Key, error) {
	set := is.cfg.Keys.Load()
	if !set.Usable(now) {
		return nil, tr.fail("key", fmt.Errorf("%w: the issuer of the token has no usable key set", ErrKeysUnavailable))
	}
	if h.kid == "" {
		return v.checkKidless(is, spec, cl, set, signing, sig, tr)
	}

	key, ok := set.Lookup(h.kid)
	refreshed := false
	if !ok {
		if is.cfg.Keys.RecentlyMissing(h.kid, now) {
			return nil, tr.fail("key", fmt.Errorf("%w: kid %s (recently proven absent)", ErrUnknownKid, quote(h.kid)))
		}
		if is.cfg.Refresher == nil {
			return nil, tr.fail("key", fmt.Errorf("%w: kid %s", ErrUnknownKid, quote(h.kid)))
		}
		// The kid is a slice of the decoded header, as long as the token
		// allows: a Refresher keeps the kids it is asked for (jwks.Fetcher,
		// up to cache.MaxMissing per issuer, for the process's life), and
		// must not keep every unauthenticated header with them.
		rerr := is.cfg.Refresher.RefreshUnknownKid(ctx, strings.Clone(h.kid))
		// Look again even when the refresher declined: a concurrent
		// request's refresh (the one that spent the budget) may have
		// published the kid meanwhile.
		refreshed = rerr == nil
		if set = is.cfg.Keys.Load(); !set.Usable(now) {
			return nil, tr.fail("key", fmt.Errorf("%w: the issuer of the token has no usable key set", ErrKeysUnavailable))
		}
		if key, ok = set.Lookup(h.kid); !ok {
			if rerr != nil && !errors.Is(rerr, ErrKidAbsent) {
				return nil, tr.fail("key", fmt.Errorf("%w: kid %s (%w: %w)", ErrUnknownKid, quote(h.kid), ErrKidNotRefreshed, rerr))
			}
			if rerr != nil {
				return nil, tr.fail("key", fmt.Errorf("%w: kid %s (%w)", ErrUnknownKid, quote(h.kid), rerr))
			}
			return nil, tr.fail("key", fmt.Errorf("%w: kid %s (not found after a refresh)", ErrUnknownKid, quote(h.kid)))
		}
	}
	if why := spec.fitsFor(key, is.spiffe != ""); why != "" {
		return nil, tr.fail("key", fmt.Errorf("%w: kid %s: %s", ErrAlgNotAllowed, quote(h.kid), why))
	}
	if !keyIssuerMatches(key.Issuer, cl.iss, cl.tid) {
		return nil, tr.fail("key", fmt.Errorf("%w: kid %s is bound to another issuer than the token's iss %s", ErrWrongIssuer, quote(h.kid), quote(cl.iss)))
	}
	if tr != nil {
		d := fmt.Sprintf("kid %s: %s, thumbprint %s", quote(h.kid), strings.TrimSpace(key.Kty+" "+key.Crv), key.Thumbprint)
		if refreshed {
			d += " (found after a refresh)"
		}
		tr.add("key", true, d)
	}
	if v.onAttempt != nil {
		v.onAttempt(key)
	}
	if !v.sig.verify(is, spec, signing, sig, key) {
		return nil, tr.fail("signature", fmt.Errorf("%w: %s with kid %s", ErrBadSignature, spec.name, quote(h.kid)))
	}
	if tr != nil {
		tr.add("signature", true, spec.name+" verified")
	}
	return key, nil
}

// checkKidless tries a token without kid against each key of the set that
// fits its alg and issuer, in set order, at most MaxKidless of them.
func (v *Verifier) checkKidless(is *issuer, spec *algSpec, cl *claims, set *cache.Set, signing string, sig []byte, tr *trace) (*cache.Key, error) {
	fitting, tried := 0, 0
	wrongIssuer := false
	for _, key := range set.Keys() {
		if spec.fitsFor(key, is.spiffe != "") != "" {
			continue
		}
		if !keyIssuerMatches(key.Issuer, cl.iss, cl.tid) {
			wrongIssuer = true
			continue
		}
		fitting++
		if tried == v.maxKidless {
			break
		}
		if fitting == 1 && tr != nil {
			tr.add("key", true, fmt.Sprintf("no kid: trying keys that fit %s, at most %d", spec.name, v.maxKidless))
		}
		tried++
		if v.onAttempt != nil {
			v.onAttempt(key)
		}
		if v.sig.verify(is, spec, signing, sig, key) {
			if tr != nil {
				tr.add("signature", true, fmt.Sprintf("%s verified by key %d tried (thumbprint %s)", spec.name, tried, key.Thumbprint))
			}
			return key, nil
		}
	}
	switch {
	case fitting == 0 && wrongIssuer:
		return nil, tr.fail("key", fmt.Errorf("%w: no key of the set is bound to iss %s", ErrWrongIssuer, quote(cl.iss)))
	case fitting == 0:
		return nil, tr.fail("key", fmt.Errorf("%w: token has no kid and no key fits %s", ErrAlgNotAllowed, spec.name))
	}
	return nil, tr.fail("signature", fmt.Errorf("%w: token has no kid; %d fitting keys tried", ErrBadSignature, tried))
}

// resultBox is a Result with room for a one-item Audience.
type resultBox struct {
	Result
	aud [1]string
}

func quoteList(l []string) string {
	if len(l) > 8 {
		l = l[:8]
	}
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, " ") + "]"
}
