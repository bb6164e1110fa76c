package verify

import (
	"context"
	"fmt"
	"time"
)

// Signed is a JWS that a configured issuer signed: its signature verified
// with one of the issuer's cached keys under an algorithm of its allowlist.
// Nothing else of it was judged: not exp, nbf, aud, typ nor any claim an
// access token needs. It is what [Verifier.VerifySigned] returns to a caller
// that holds another kind of token to its own rules (a back-channel logout
// token, a Security Event Token), and it is that caller's to keep.
type Signed struct {
	// ConfiguredIssuer is the [Issuer.Issuer] whose key verified the
	// token; it equals the token's iss exactly.
	ConfiguredIssuer string
	// Alg, Kid and Type are the header's alg, kid and typ; HasType reports
	// a typ member (an empty one included).
	Alg, Kid, Type string
	HasType        bool
	// Claims is the claims set's JSON, exactly as signed: a JSON object in
	// valid UTF-8 without duplicate member names.
	Claims []byte
	// Subject and ID are the sub and jti claims, "" when absent.
	Subject, ID string
	// Audience is the aud claim as a list, nil when absent.
	Audience []string
	// IssuedAt, ExpiresAt and NotBefore are the iat, exp and nbf claims;
	// each is meaningful only when its Has… field is set.
	IssuedAt, ExpiresAt, NotBefore          time.Time
	HasIssuedAt, HasExpiresAt, HasNotBefore bool
	// Leeway is the issuer's tolerated clock skew (zero: none).
	Leeway time.Duration
}

// TypeIs reports whether the header's typ is want, compared as media types
// are (case-insensitively, with or without "application/", RFC 7515
// §4.1.9). A token without typ is no type.
func (s *Signed) TypeIs(want string) bool { return s.HasType && typeMatches(want, s.Type) }

// VerifySigned checks that token is a compact JWS signed by the configured
// issuer its iss claim names exactly: its size, its structure (strict
// base64url, JSON objects without duplicate members), a header alg that
// is not "none" and no crit, an alg in the issuer's allowlist, and the
// signature with the issuer's cached key of the token's kid (an unknown
// kid refreshes the key set as [Verifier.Verify] does, bounded by ctx).
// Every other rule (exp, nbf, aud, typ, required claims) is the caller's:
// VerifySigned is for tokens that are not access tokens and must never be
// answered as one, so it neither reads nor fills the token cache, and an
// issuer matched only by a {tenantid} template, a SPIFFE trust domain or
// SkipIssuerCheck is wrong_issuer. Errors are [*Error], as Verify's. It is
// safe for concurrent use.
func (v *Verifier) VerifySigned(ctx context.Context, token string, now time.Time) (*Signed, error) {
	s, named, kid, err := v.signed(ctx, token, now)
	if err != nil {
		e := &Error{Class: Class(err), Kid: kid, Err: err}
		if named != nil {
			e.Issuer = named.cfg.Issuer
		}
		return nil, e
	}
	return s, nil
}

// signed is VerifySigned without the *Error: it also returns the issuer the
// token named (nil: none) and its kid.
func (v *Verifier) signed(ctx context.Context, token string, now time.Time) (*Signed, *issuer, string, error) {
	if err := v.checkSize(token, nil); err != nil {
		return nil, nil, "", err
	}
	h, payload, _, sig, signing, cl, err := v.parse(token)
	if err != nil {
		return nil, nil, "", err
	}
	if err := checkHeader(h, nil); err != nil {
		return nil, nil, h.kid, err
	}
	if err := checkCrit(h, nil); err != nil {
		return nil, nil, h.kid, err
	}
	if !cl.has(clIss) {
		return nil, nil, h.kid, fmt.Errorf("%w: iss is required", ErrMissingClaim)
	}
	is, err := v.router.route(cl.iss, true, cl.tid, cl.sub)
	if err != nil {
		return nil, nil, h.kid, err
	}
	if is.cfg.Issuer != cl.iss || !is.cfg.TakesSignals() {
		return nil, nil, h.kid, fmt.Errorf("%w: iss %s is not a configured issuer's exact name", ErrWrongIssuer, quote(cl.iss))
	}
	spec, err := is.checkAlg(h, nil)
	if err != nil {
		return nil, is, h.kid, err
	}
	if _, err := v.checkSignature(ctx, is, spec, h, &cl, signing, sig, now, nil); err != nil {
		return nil, is, h.kid, err
	}
	v.headers.remember(signing, h)
	s := &Signed{
		ConfiguredIssuer: is.cfg.Issuer,
		Alg:              h.alg, Kid: h.kid, Type: h.typ, HasType: h.hasTyp,
		Claims:  payload,
		Subject: cl.sub, ID: cl.jti,
		Audience: cl.audList(),
		IssuedAt: cl.iat, ExpiresAt: cl.exp, NotBefore: cl.nbf,
		HasIssuedAt: cl.has(clIat), HasExpiresAt: cl.has(clExp), HasNotBefore: cl.has(clNbf),
		Leeway: max(is.leeway, 0),
	}
	if !cl.has(clAud) {
		s.Audience = nil
	}
	return s, is, h.kid, nil
}
