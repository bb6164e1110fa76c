package signals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/verify"
)

// The event types a Receiver acts on (CAEP 1.0 §3, RISC 1.0 §2, SSF 1.0
// §8.1.4).
const (
	EventSessionRevoked       = "https://schemas.openid.net/secevent/caep/event-type/session-revoked"
	EventCredentialChange     = "https://schemas.openid.net/secevent/caep/event-type/credential-change"
	EventAccountDisabled      = "https://schemas.openid.net/secevent/risc/event-type/account-disabled"
	EventAccountPurged        = "https://schemas.openid.net/secevent/risc/event-type/account-purged"
	EventSessionsRevoked      = "https://schemas.openid.net/secevent/risc/event-type/sessions-revoked"
	EventCredentialCompromise = "https://schemas.openid.net/secevent/risc/event-type/credential-compromise"
	EventVerification         = "https://schemas.openid.net/secevent/ssf/event-type/verification"
)

// SETType is the typ header of a Security Event Token (RFC 8417 §2.3).
const SETType = "secevent+jwt"

// eventNames are the metric labels of the known event types; any other is
// "other".
var eventNames = map[string]string{
	EventSessionRevoked:       "caep/session-revoked",
	EventCredentialChange:     "caep/credential-change",
	EventAccountDisabled:      "risc/account-disabled",
	EventAccountPurged:        "risc/account-purged",
	EventSessionsRevoked:      "risc/sessions-revoked",
	EventCredentialCompromise: "risc/credential-compromise",
	EventVerification:         "ssf/verification",
}

// EventName returns the short name of an event type URI that labels
// metrics and logs ("caep/session-revoked", …), "other" for any other.
func EventName(uri string) string {
	if n, ok := eventNames[uri]; ok {
		return n
	}
	return "other"
}

// Outcome is what a Receiver did with one event of a SET.
type Outcome struct {
	// Event is the event's short name ([EventName]).
	Event string
	// Result is "applied" (its entries are stored), "ignored" (an event
	// that revokes nothing, such as SSF verification) or "unsupported" (an
	// event type or subject format the receiver does not act on:
	// acknowledged, counted, logged, nothing changed).
	Result string
	// Why says why an event is unsupported, "" otherwise.
	Why string
}

// Receive checks a SET that issuer sent (the issuer its push bearer names,
// or whose stream a [Poller] reads), and stores what its events revoke.
// The SET must have typ secevent+jwt, be signed by the issuer's cached
// keys under an allowed algorithm, carry the issuer as iss, an aud of its
// ssf.audiences, an iat not ahead of now by more than the leeway (and an
// exp, when present, not passed), a jti never used before, and an events
// object of event objects. source labels the entries (revoke.SourceSSFPush
// or revoke.SourceSSFPoll). It returns the entries as stored and each
// event's outcome. A refusal wraps [ErrInvalid] with its RFC 8935 code
// ([Code]); nothing is stored then. A failure to decide or store wraps
// [ErrUnavailable]. It is safe for concurrent use.
func (r *Receiver) Receive(ctx context.Context, issuer, token string, source revoke.Source, now time.Time) ([]revoke.Entry, []Outcome, error) {
	s, entries, outcomes, err := r.CheckSET(ctx, issuer, token, source, now)
	if err == nil {
		entries, err = r.commit(ctx, s, entries, now)
	}
	switch {
	case err == nil:
		for _, o := range outcomes {
			r.count(issuer, o.Event, o.Result)
			if o.Result == "unsupported" {
				r.log.Warn("security event not acted on", "issuer", issuer, "event", o.Event, "why", o.Why, "source", source)
			} else {
				r.log.Info("security event received", "issuer", issuer, "event", o.Event, "result", o.Result, "source", source)
			}
		}
	case errors.Is(err, ErrReplayed):
		r.countAll(issuer, outcomes, "replayed")
		r.refused(ctx, now, "security event token refused", "issuer", issuer, "source", source, "err", err)
	case errors.Is(err, ErrUnavailable):
		r.countAll(issuer, outcomes, "unavailable")
		r.notStored(ctx, now, "security event token not stored", "issuer", issuer, "source", source, "err", err)
	default:
		r.countAll(issuer, outcomes, "invalid")
		r.refused(ctx, now, "security event token refused", "issuer", issuer, "source", source, "code", Code(err), "err", err)
	}
	return entries, outcomes, err
}

// refused logs one refused token at info, within the refusal rate.
func (r *Receiver) refused(ctx context.Context, now time.Time, msg string, args ...any) {
	if r.log.Enabled(ctx, slog.LevelInfo) && r.refusal.Allow(ctx, r.log, slog.LevelInfo, now) {
		r.log.InfoContext(ctx, msg, args...)
	}
}

// notStored logs one token that could not be stored at warn, within the
// rate of its own allowance.
func (r *Receiver) notStored(ctx context.Context, now time.Time, msg string, args ...any) {
	if r.log.Enabled(ctx, slog.LevelWarn) && r.unstored.Allow(ctx, r.log, slog.LevelWarn, now) {
		r.log.WarnContext(ctx, msg, args...)
	}
}

// countAll records result for each event of outcomes, or for one
// "unknown" event when they were not read.
func (r *Receiver) countAll(issuer string, outcomes []Outcome, result string) {
	if len(outcomes) == 0 {
		r.count(issuer, "unknown", result)
	}
	for _, o := range outcomes {
		r.count(issuer, o.Event, result)
	}
}

// CheckSET is [Receiver.Receive] without the jti's use and the store: it
// returns the verified SET (also with a refusal after its signature
// verified), the entries it would store (without ID, CreatedAt or
// ExpiresAt) and each event's outcome. It stores nothing.
func (r *Receiver) CheckSET(ctx context.Context, issuer, token string, source revoke.Source, now time.Time) (*verify.Signed, []revoke.Entry, []Outcome, error) {
	is := r.issuers[issuer]
	if is == nil || is.SSF == nil {
		return nil, nil, nil, invalid(ErrInvalidIssuer, "the issuer takes no SETs")
	}
	s, err := r.v.VerifySigned(ctx, token, now)
	if err != nil {
		// A SET that names another configured issuer is that, whatever
		// else is wrong with it (its keys may be unavailable).
		if ve := (*verify.Error)(nil); errors.As(err, &ve) && ve.Issuer != "" && ve.Issuer != issuer {
			return nil, nil, nil, invalid(ErrInvalidIssuer, "iss is not the issuer that sent it")
		}
		return nil, nil, nil, verifyErr(err)
	}
	if s.ConfiguredIssuer != issuer {
		return nil, nil, nil, invalid(ErrInvalidIssuer, "iss is not the issuer that sent it")
	}
	entries, outcomes, err := setEntries(is, s, source, now)
	if err != nil {
		return s, nil, outcomes, err
	}
	return s, entries, outcomes, nil
}

// setEntries holds the verified SET s of issuer is to RFC 8417 and SSF
// after its signature, and returns the entries its events name and each
// event's outcome.
func setEntries(is *Issuer, s *verify.Signed, source revoke.Source, now time.Time) ([]revoke.Entry, []Outcome, error) {
	if !s.TypeIs(SETType) {
		return nil, nil, invalid(ErrInvalidRequest, "typ %.64q is not %s", s.Type, SETType)
	}
	if !audienceHas(s.Audience, is.SSF.Audiences) {
		return nil, nil, invalid(ErrInvalidAudience, "aud holds none of the issuer's ssf audiences")
	}
	if err := checkTimes(s, now); err != nil {
		return nil, nil, err
	}
	cl, err := parseObject(s.Claims)
	if err != nil {
		return nil, nil, invalid(ErrInvalidRequest, "claims: %v", err)
	}
	events, ok, err := cl.object("events")
	switch {
	case err != nil:
		return nil, nil, invalid(ErrInvalidRequest, "%v", err)
	case !ok || len(events) == 0:
		return nil, nil, invalid(ErrInvalidRequest, "events is required and must name an event")
	}
	var subID object
	if _, ok := cl["sub_id"]; ok {
		if subID, _, err = cl.object("sub_id"); err != nil {
			return nil, nil, invalid(ErrInvalidRequest, "%v", err)
		}
	}
	// Events in a stable order: the outcomes, the entries and the log
	// read the same for the same SET.
	types := make([]string, 0, len(events))
	for t := range events {
		types = append(types, t)
	}
	sort.Strings(types)
	var entries []revoke.Entry
	outcomes := make([]Outcome, 0, len(types))
	for _, t := range types {
		ev, _, err := events.object(t)
		if err != nil {
			return nil, outcomes, invalid(ErrInvalidRequest, "event %s: not a JSON object", EventName(t))
		}
		es, o, err := eventEntries(is.Issuer, t, ev, subID, s.IssuedAt)
		if err != nil {
			return nil, outcomes, invalid(ErrInvalidRequest, "event %s: %v", EventName(t), err)
		}
		for i := range es {
			es[i].Source = source
		}
		entries = append(entries, es...)
		outcomes = append(outcomes, o)
	}
	return entries, outcomes, nil
}

// eventEntries returns the entries event t (its members ev) names, with
// subID the SET's sub_id (nil: none) and iat its issued-at time.
func eventEntries(issuer, t string, ev, subID object, iat time.Time) ([]revoke.Entry, Outcome, error) {
	o := Outcome{Event: EventName(t), Result: "applied"}
	switch t {
	case EventVerification:
		o.Result = "ignored"
		return nil, o, nil
	case EventSessionRevoked, EventCredentialChange, EventAccountDisabled, EventAccountPurged,
		EventSessionsRevoked, EventCredentialCompromise:
	default:
		o.Result, o.Why = "unsupported", "event type not acted on"
		return nil, o, nil
	}
	at, ok, err := ev.date("event_timestamp")
	if err != nil {
		return nil, o, err
	}
	if !ok {
		at = iat
	}
	raw := subID
	if raw == nil {
		var has bool
		if raw, has, err = ev.object("subject"); err != nil {
			return nil, o, err
		} else if !has {
			return nil, o, errors.New("no subject: neither sub_id nor the event's subject")
		}
	}
	sub, sid, why, err := resolveSubject(issuer, raw)
	if err != nil {
		return nil, o, err
	}
	e := revoke.Entry{Issuer: issuer}
	switch {
	case t == EventSessionRevoked && sid != "":
		e.Kind, e.Value = revoke.KindSID, sid
	case sub != "":
		e.Kind, e.Value, e.IssuedBefore = revoke.KindSub, sub, at
	default:
		if why == "" {
			why = "the subject names no user"
		}
		o.Result, o.Why = "unsupported", why
		return nil, o, nil
	}
	return []revoke.Entry{e}, o, nil
}

// resolveSubject reads a subject identifier (RFC 9493) of issuer: its
// user's sub (format iss_sub with the issuer's iss, or opaque), and, for
// a complex subject, its session's sid (format opaque). why says why a
// subject names neither ("" when it names one); a subject that is not a
// well-formed identifier of its format is an error.
func resolveSubject(issuer string, subj object) (sub, sid, why string, err error) {
	format, _, err := subj.str("format")
	if err != nil {
		return "", "", "", err
	}
	switch format {
	case "iss_sub", "opaque":
		sub, why, err = userOf(issuer, format, subj)
		return sub, "", why, err
	case "complex":
		user, hasUser, err := subj.object("user")
		if err != nil {
			return "", "", "", err
		}
		session, hasSession, err := subj.object("session")
		if err != nil {
			return "", "", "", err
		}
		if hasUser {
			f, _, err := user.str("format")
			if err != nil {
				return "", "", "", fmt.Errorf("user: %w", err)
			}
			if sub, why, err = userOf(issuer, f, user); err != nil {
				return "", "", "", fmt.Errorf("user: %w", err)
			}
		}
		if hasSession {
			f, _, err := session.str("format")
			if err != nil {
				return "", "", "", fmt.Errorf("session: %w", err)
			}
			if f == "opaque" {
				if sid, err = nonEmpty(session, "id"); err != nil {
					return "", "", "", fmt.Errorf("session: %w", err)
				}
			} else if why == "" {
				why = fmt.Sprintf("session subject format %.64q", f)
			}
		}
		if !hasUser && !hasSession {
			why = "complex subject without user or session"
		}
		return sub, sid, why, nil
	case "":
		return "", "", "", errors.New("subject has no format")
	}
	return "", "", fmt.Sprintf("subject format %.64q", format), nil
}

// userOf reads a user subject of format iss_sub (its iss must be issuer)
// or opaque; another format, or another issuer's iss_sub, names no user
// (why says which).
func userOf(issuer, format string, subj object) (sub, why string, err error) {
	switch format {
	case "iss_sub":
		iss, err := nonEmpty(subj, "iss")
		if err != nil {
			return "", "", err
		}
		if sub, err = nonEmpty(subj, "sub"); err != nil {
			return "", "", err
		}
		if iss != issuer {
			return "", "iss_sub of another issuer", nil
		}
		return sub, "", nil
	case "opaque":
		sub, err = nonEmpty(subj, "id")
		return sub, "", err
	case "":
		return "", "", errors.New("subject has no format")
	}
	return "", fmt.Sprintf("user subject format %.64q", format), nil
}

// nonEmpty reads o's member name, a non-empty string.
func nonEmpty(o object, name string) (string, error) {
	s, ok, err := o.str(name)
	switch {
	case err != nil:
		return "", err
	case !ok || s == "":
		return "", fmt.Errorf("%s is required", name)
	}
	return s, nil
}
