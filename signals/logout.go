package signals

import (
	"context"
	"errors"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/verify"
)

// BackchannelLogoutEvent is the member of a logout token's events claim
// that makes it one (OpenID Connect Back-Channel Logout 1.0 §2.4).
const BackchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

// logoutEventName labels logout tokens in metrics.
const logoutEventName = "backchannel-logout"

// Logout checks a back-channel logout token by every rule of BCL §2.6 and
// stores what it revokes: signed by a configured issuer's cached keys under
// an allowed algorithm; that issuer takes logout tokens; a typ header
// absent, "JWT" or "logout+jwt" (never another kind's); an aud holding one
// of the issuer's logout audiences; an iat not ahead of now by more than
// the issuer's leeway, nor older than the jti TTL ([Options].JTITTL:
// a jti is remembered that long, so an older token could be one whose jti
// was forgotten); an exp, when present, not passed; a jti never used
// before; an events claim that is an object whose backchannel-logout
// member is an object; a sub or a sid; no nonce. It stores a sid entry
// when the issuer revokes sessions and the token names one, else a sub
// entry with issued_before the token's iat, and returns the entries as
// stored. A refusal wraps [ErrInvalid] (nothing is stored); a failure to
// decide or store wraps [ErrUnavailable]. It is safe for concurrent use.
func (r *Receiver) Logout(ctx context.Context, token string, now time.Time) ([]revoke.Entry, error) {
	s, entries, err := r.CheckLogout(ctx, token, now)
	issuer := ""
	if s != nil {
		issuer = s.ConfiguredIssuer
	}
	if err == nil {
		entries, err = r.commit(ctx, s, entries, now)
	}
	switch {
	case err == nil:
		r.count(issuer, logoutEventName, "applied")
		for _, e := range entries {
			r.log.Info("back-channel logout applied", "issuer", issuer, "kind", e.Kind, "id", e.ID)
		}
	case errors.Is(err, ErrReplayed):
		r.count(issuer, logoutEventName, "replayed")
		r.refused(ctx, now, "back-channel logout token refused", "issuer", issuer, "err", err)
	case errors.Is(err, ErrUnavailable):
		r.count(issuer, logoutEventName, "unavailable")
		r.notStored(ctx, now, "back-channel logout not stored", "issuer", issuer, "err", err)
	default:
		r.count(issuer, logoutEventName, "invalid")
		r.refused(ctx, now, "back-channel logout token refused", "issuer", issuer, "err", err)
	}
	return entries, err
}

// CheckLogout is [Receiver.Logout] without the jti's use and the store:
// it returns the verified token and the entries it would store (without
// ID, CreatedAt or ExpiresAt), or the refusal. The verified token is
// returned with a refusal too, when its signature verified. It stores
// nothing and is safe for concurrent use.
func (r *Receiver) CheckLogout(ctx context.Context, token string, now time.Time) (*verify.Signed, []revoke.Entry, error) {
	s, err := r.v.VerifySigned(ctx, token, now)
	if err != nil {
		return nil, nil, verifyErr(err)
	}
	entries, err := r.logoutEntries(s, now)
	if err != nil {
		return s, nil, err
	}
	return s, entries, nil
}

// logoutEntries holds the verified logout token s to the rules of BCL §2.6
// after its signature, and returns the entries it names.
func (r *Receiver) logoutEntries(s *verify.Signed, now time.Time) ([]revoke.Entry, error) {
	is := r.issuers[s.ConfiguredIssuer]
	if is == nil || is.Logout == nil {
		return nil, invalid(ErrInvalidIssuer, "the issuer takes no back-channel logout tokens")
	}
	// A logout token is typed, when it is, as itself (BCL §2.4, RFC 8725
	// §3.11): an access token, an ID token's at+jwt sibling, a SET or a
	// DPoP proof is never one. "JWT" is what most IdPs (Hydra v2.3.0)
	// send.
	if s.HasType && !s.TypeIs("JWT") && !s.TypeIs("logout+jwt") {
		return nil, invalid(ErrInvalidRequest, "typ %.64q is not a logout token's", s.Type)
	}
	if !audienceHas(s.Audience, is.Logout.Audiences) {
		return nil, invalid(ErrInvalidAudience, "aud holds none of the issuer's back-channel logout audiences")
	}
	if err := checkTimes(s, now); err != nil {
		return nil, err
	}
	if !now.Before(s.IssuedAt.Add(r.ttl)) {
		// Anyone who saw a logout token can post it again, and its jti is
		// remembered for the TTL only: once forgotten, the same token
		// would be taken as new (a lifted entry stored again). commit
		// remembers every jti until at least iat + the TTL.
		return nil, invalid(ErrInvalidRequest, "iat %s is older than the %s a logout token's jti is remembered",
			s.IssuedAt.UTC().Format(time.RFC3339), r.ttl)
	}
	cl, err := parseObject(s.Claims)
	if err != nil {
		return nil, invalid(ErrInvalidRequest, "claims: %v", err)
	}
	events, ok, err := cl.object("events")
	switch {
	case err != nil:
		return nil, invalid(ErrInvalidRequest, "%v", err)
	case !ok:
		return nil, invalid(ErrInvalidRequest, "events is required")
	}
	if _, ok, err := events.object(BackchannelLogoutEvent); err != nil || !ok {
		return nil, invalid(ErrInvalidRequest, "events has no %s member that is an object", BackchannelLogoutEvent)
	}
	if _, ok := cl["nonce"]; ok {
		return nil, invalid(ErrInvalidRequest, "a logout token must not carry nonce")
	}
	if _, ok := cl["sub"]; ok && s.Subject == "" {
		return nil, invalid(ErrInvalidRequest, "sub is empty")
	}
	sid, hasSID, err := cl.str("sid")
	switch {
	case err != nil:
		return nil, invalid(ErrInvalidRequest, "%v", err)
	case hasSID && sid == "":
		return nil, invalid(ErrInvalidRequest, "sid is empty")
	case s.Subject == "" && !hasSID:
		return nil, invalid(ErrInvalidRequest, "neither sub nor sid is present")
	}
	e := revoke.Entry{Issuer: s.ConfiguredIssuer, Source: revoke.SourceBackchannelLogout}
	switch {
	case hasSID && (is.Logout.Revoke != RevokeSubject || s.Subject == ""):
		e.Kind, e.Value = revoke.KindSID, sid
	default:
		e.Kind, e.Value, e.IssuedBefore = revoke.KindSub, s.Subject, s.IssuedAt
	}
	return []revoke.Entry{e}, nil
}
