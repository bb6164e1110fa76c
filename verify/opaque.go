package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Introspector answers for the opaque tokens of one issuer, from its
// authorization server (RFC 7662). *introspect.Client implements it.
type Introspector interface {
	// Introspect returns the server's answer for an active token. It
	// returns an error wrapping [ErrInactive] for a token the server calls
	// inactive, or [ErrKeysUnavailable] when no answer could be had (the
	// server unreachable past its stale window). It blocks for at most one
	// upstream call, bounded by ctx; the same *Introspection may be returned
	// to many callers and must not be modified.
	Introspect(ctx context.Context, token string, now time.Time) (*Introspection, error)
}

// Introspection is an authorization server's answer for an active opaque
// token. It is immutable once returned by an [Introspector], except for the
// memo slot the verifier fills on its first use.
type Introspection struct {
	// Claims are the members of the answer, without "active": a JSON object
	// in valid UTF-8 (the verifier checks it again).
	Claims json.RawMessage

	// memo is the Result the verifier built from Claims for one issuer,
	// so that a cached answer costs no decoding.
	memo atomic.Pointer[opaqueMemo]
}

type opaqueMemo struct {
	is  *issuer
	res *Result
	err error // a check of Claims that does not depend on time failed
}

// compactJWS reports whether token has the shape of a compact JWS: three
// dot-separated segments, the first of which decodes (base64url) to a JSON
// object. Any other token is opaque. A header seen before is answered from
// the header cache without decoding.
func (v *Verifier) compactJWS(token string) bool {
	d1 := strings.IndexByte(token, '.')
	if d1 < 0 || strings.Count(token[d1+1:], ".") != 1 {
		return false
	}
	seg := token[:d1]
	if v.headers.get(seg) != nil {
		return true
	}
	raw, err := v.b64.DecodeString(seg)
	if err != nil {
		return false
	}
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// checkOpaque answers an opaque token from the one introspection-enabled
// issuer among candidates (configured issuer names; empty means all).
func (v *Verifier) checkOpaque(ctx context.Context, token string, now time.Time, candidates []string, tr *trace, at *attempt) (*Result, error) {
	if tr != nil {
		tr.add("structure", true, "opaque token (not a compact JWS)")
	}
	var is *issuer
	n := 0
	for _, c := range v.introspectors {
		if len(candidates) == 0 || slices.Contains(candidates, c.cfg.Issuer) {
			is, n = c, n+1
		}
	}
	switch n {
	case 0:
		return nil, tr.fail("issuer", fmt.Errorf("%w: opaque token, and no introspection-enabled issuer to ask", ErrUnknownIssuer))
	case 1:
	default:
		return nil, tr.fail("issuer", fmt.Errorf("%w: opaque token, and %d introspection-enabled issuers to choose from", ErrUnknownIssuer, n))
	}
	at.routed, at.routedIssuer = true, is
	if tr != nil {
		tr.add("issuer", true, fmt.Sprintf("introspected at issuer %s", quote(is.cfg.Issuer)))
	}
	ans, err := is.cfg.Introspector.Introspect(ctx, token, now)
	if err == nil && ans == nil {
		// An Introspector of a library caller's own that gave neither an
		// answer nor an error: no answer could be had.
		err = fmt.Errorf("%w: the introspector returned no answer", ErrKeysUnavailable)
	}
	if err != nil {
		if !errors.Is(err, ErrInactive) && !errors.Is(err, ErrKeysUnavailable) {
			// Fail closed: an introspector's error of another kind is a
			// failure to decide, never an allow or a verdict.
			err = fmt.Errorf("%w: %w", ErrKeysUnavailable, err)
		}
		if !errors.Is(err, ErrInactive) {
			// The caller is told that no answer could be had, not why:
			// the reason names the endpoint (or the shared cache's Redis),
			// its address and path. The operator reads it in the hint
			// (the log line, --explain) and in the introspector's own log.
			at.upstream = err.Error()
			err = &withheld{msg: ErrKeysUnavailable.Error() + ": the token's authorization server gave no usable answer", err: err}
		}
		return nil, tr.fail("introspection", err)
	}
	m := ans.memo.Load()
	if m == nil || m.is != is {
		m = is.opaqueResult(ans.Claims)
		ans.memo.Store(m)
	}
	if m.err != nil {
		return nil, tr.fail("claims", m.err)
	}
	res := m.res
	if !res.ExpiresAt.IsZero() && !now.Add(-is.leeway).Before(res.ExpiresAt) {
		return nil, tr.fail("exp", fmt.Errorf("%w: exp %s, now %s, leeway %s", ErrExpired,
			res.ExpiresAt.Format(time.RFC3339), now.UTC().Format(time.RFC3339), is.leeway))
	}
	if err := is.checkLifetime(res.ExpiresAt, res.IssuedAt, now); err != nil {
		return nil, tr.fail("exp", err)
	}
	if !res.IssuedAt.IsZero() && res.IssuedAt.After(now.Add(is.leeway)) {
		// As for a JWT: an answer issued in the future would escape every
		// issued_before revocation.
		return nil, tr.fail("iat", fmt.Errorf("%w: iat %s, now %s, leeway %s", ErrNotYetValid,
			res.IssuedAt.Format(time.RFC3339), now.UTC().Format(time.RFC3339), is.leeway))
	}
	if !res.NotBefore.IsZero() && res.NotBefore.After(now.Add(is.leeway)) {
		return nil, tr.fail("nbf", fmt.Errorf("%w: nbf %s, now %s, leeway %s", ErrNotYetValid,
			res.NotBefore.Format(time.RFC3339), now.UTC().Format(time.RFC3339), is.leeway))
	}
	if tr != nil {
		tr.add("introspection", true, "active")
	}
	return res, nil
}

// opaqueResult builds the Result of an active answer for is, with the
// checks that do not depend on time: the answer's iss (when present) is the
// issuer's, its aud holds one of the issuer's audiences, its required claims
// are present.
func (is *issuer) opaqueResult(raw json.RawMessage) *opaqueMemo {
	ps := string(raw)
	var cl claims
	if err := parseClaims(ps, &cl); err != nil {
		// The server's answer is broken, not the token: could not decide,
		// as for an answer introspect.Decode refuses (an exp that is not a
		// number, an active that is not a boolean).
		return &opaqueMemo{is: is, err: fmt.Errorf("%w: introspection answer: %w", ErrKeysUnavailable, err)}
	}
	fail := func(err error) *opaqueMemo { return &opaqueMemo{is: is, err: err} }
	if cl.has(clIss) && cl.iss != is.cfg.Issuer && !(is.template && matchTemplate(is.prefix, is.suffix, cl.iss, cl.tid)) {
		return fail(fmt.Errorf("%w: introspection answer's iss %s is not the configured issuer", ErrWrongIssuer, quote(cl.iss)))
	}
	if len(is.cfg.Audiences) > 0 {
		if err := is.audienceError(&cl); err != nil {
			return fail(err)
		}
	}
	if err := is.missingClaim(&cl, ps); err != nil {
		return fail(err)
	}
	if err := notAccessToken(ps); err != nil {
		return fail(err)
	}
	res := &Result{
		Issuer:           cl.iss,
		ConfiguredIssuer: is.cfg.Issuer,
		Claims:           raw,
		Header:           json.RawMessage("{}"),
		Subject:          cl.sub,
		Audience:         cl.audList(),
		ID:               cl.jti,
		Opaque:           true,
	}
	if !cl.has(clIss) {
		res.Issuer = is.cfg.Issuer
	}
	if !cl.has(clAud) {
		res.Audience = nil
	}
	cl.setTimes(res)
	if len(is.cfg.ExtractClaims) > 0 {
		res.Extracted = extract(ps, is.cfg.ExtractClaims)
	}
	if cl.cnf != "" {
		// An introspected token is sender-constrained by the answer's cnf
		// (RFC 9449 §6.2, RFC 8705 §3.2), as a JWT is by its own.
		cnf, err := decodeConfirmation(cl.cnf)
		if err != nil {
			return fail(fmt.Errorf("%w: introspection answer's cnf: %w", ErrKeysUnavailable, err))
		}
		res.Confirmation = cnf
	}
	return &opaqueMemo{is: is, res: res}
}

// notAccessToken refuses an active answer that says its token is not an
// access token (wrong_type): Hydra's token_use other than "access_token",
// Keycloak's typ "Refresh" or "Offline", Duende IdentityServer's
// token_type "refresh_token" (to the client that requested the token).
// These servers answer active for their refresh tokens too (RFC 7662 lets them), and a refresh token is a
// credential for the authorization server only (RFC 6749 §1.5), never for
// an API: accepted here, a leaked one would reach every resource for as
// long as it lives, typically weeks.
func notAccessToken(ps string) error {
	it, err := newMembers(ps)
	if err != nil {
		return nil // validated by parseClaims
	}
	for {
		mb, ok, err := it.next()
		if err != nil || !ok {
			return nil
		}
		v := ps[mb.start:mb.end]
		switch mb.name {
		case "token_use":
			if v != `"access_token"` {
				return fmt.Errorf("%w: introspection answer's token_use %s is not \"access_token\"", ErrWrongType, quote(v))
			}
		case "typ":
			if s, ok := JSONString(v); ok && (strings.EqualFold(s, "Refresh") || strings.EqualFold(s, "Offline")) {
				return fmt.Errorf("%w: introspection answer's typ %s is a refresh token's", ErrWrongType, quote(s))
			}
		case "token_type":
			// RFC 7662 means the access token's type (Bearer, DPoP);
			// no access token's answer says refresh_token.
			if s, ok := JSONString(v); ok && strings.EqualFold(s, "refresh_token") {
				return fmt.Errorf("%w: introspection answer's token_type %s is a refresh token's", ErrWrongType, quote(s))
			}
		}
	}
}

// withheld is an error whose text is shown to callers in place of err's,
// which names configuration; errors.Is and errors.As still see err.
type withheld struct {
	msg string
	err error
}

func (w *withheld) Error() string { return w.msg }
func (w *withheld) Unwrap() error { return w.err }
