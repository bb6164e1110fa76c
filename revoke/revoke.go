// Package revoke holds revocation entries: the tokens an identity provider,
// a Shared Signals transmitter or an operator has cut off before they
// expire. Every entry names one configured issuer and one of: a token's
// jti, a session's sid, a subject (sub) or client (client_id) with
// issued_before, or the whole issuer with issued_before.
//
// The request path asks an in-memory copy ([Entry] values indexed for
// lookup, never a store round trip); a store ("memory", written to
// state_dir, or "redis", shared by every replica) acknowledges an entry only
// once it holds it.
package revoke

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Kind says what an [Entry] names.
type Kind string

// The kinds of entry.
const (
	// KindJTI names one token by its jti.
	KindJTI Kind = "jti"
	// KindSID names a session: every token whose sid equals.
	KindSID Kind = "sid"
	// KindSub names a subject: its tokens issued before IssuedBefore.
	KindSub Kind = "sub"
	// KindClientID names a client: tokens whose client_id (or azp) equals,
	// issued before IssuedBefore.
	KindClientID Kind = "client_id"
	// KindIssuer names every token of the issuer issued before IssuedBefore.
	KindIssuer Kind = "issuer"
)

// Source says where an [Entry] came from; it labels metrics and the log.
type Source string

// The sources of entries.
const (
	SourceBackchannelLogout Source = "backchannel_logout"
	SourceSSFPush           Source = "ssf_push"
	SourceSSFPoll           Source = "ssf_poll"
	SourceAdmin             Source = "admin"
)

// Entry is one revocation.
type Entry struct {
	// ID identifies the entry (DELETE /v1/revocations/{id}); the store
	// assigns it when it is empty.
	ID string `json:"id"`
	// Issuer is the configured issuer the entry applies to.
	Issuer string `json:"issuer"`
	// Kind says what Value names; Value is empty for KindIssuer.
	Kind  Kind   `json:"kind"`
	Value string `json:"value,omitempty"`
	// IssuedBefore applies to KindSub, KindClientID and KindIssuer: tokens
	// whose iat is before it match (a token without iat matches always).
	IssuedBefore time.Time `json:"issued_before,omitzero"`
	// CreatedAt is when the entry was stored; ExpiresAt when it is
	// forgotten (CreatedAt, or a later IssuedBefore, + retention + twice
	// the largest leeway: see expiryMargin).
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Source says where it came from.
	Source Source `json:"source"`
}

// Adder stores revocations. Add returns once the entry is stored (in
// state_dir, or in Redis with the replicas asked for): only then may the
// caller acknowledge it. It returns the entry as stored (ID, CreatedAt,
// ExpiresAt set), or an error wrapping [ErrUnavailable] when the store
// cannot take it.
type Adder interface {
	Add(ctx context.Context, e Entry) (Entry, error)
}

// ErrUnavailable reports a store that could not answer: the caller
// answers 503 and acknowledges nothing.
var ErrUnavailable = errors.New("revoke: store unavailable")

// The answers of [Index.Check] and the refusals of the stores.
var (
	// ErrRevoked: an entry names the token.
	ErrRevoked = errors.New("revoke: revoked")
	// ErrStale: the replica's copy is older than its max_staleness; it
	// cannot tell, and the caller fails closed (503).
	ErrStale = errors.New("revoke: the copy of the revocations is stale")
	// ErrInvalid: an entry a store refuses (no issuer, an unknown kind, a
	// value missing or too long, an issued_before where none applies).
	ErrInvalid = errors.New("revoke: invalid entry")
	// ErrNotFound: no live entry has the ID.
	ErrNotFound = errors.New("revoke: no such entry")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("revoke: store closed")
)

// MaxValueBytes bounds an entry's issuer and value: the largest token a
// verifier accepts (verify.MaxMaxTokenBytes), so that every jti, sid, sub
// or client_id a verified token can carry can be revoked (a bound below it
// left a valid logout token naming a longer sid answered 503 for ever,
// and its session's tokens passing). The callers' bodies bound them first.
const MaxValueBytes = 1 << 20

// Kinds returns every kind, in SPEC order.
func Kinds() []Kind { return []Kind{KindJTI, KindSID, KindSub, KindClientID, KindIssuer} }

// Sources returns every source.
func Sources() []Source {
	return []Source{SourceBackchannelLogout, SourceSSFPush, SourceSSFPoll, SourceAdmin}
}

// Check reports whether a store takes e: an error wrapping [ErrInvalid]
// that says why, if not. IssuedBefore may be zero (the store sets it).
func Check(e Entry) error {
	switch {
	case e.Issuer == "":
		return fmt.Errorf("%w: issuer is required", ErrInvalid)
	case len(e.Issuer) > MaxValueBytes || len(e.Value) > MaxValueBytes:
		return fmt.Errorf("%w: issuer and value are at most %d bytes", ErrInvalid, MaxValueBytes)
	case !utf8.ValidString(e.Issuer) || !utf8.ValidString(e.Value):
		// A claim value always is UTF-8; a store writes the entry with
		// encoding/json, which puts U+FFFD in place of each byte that is
		// not: "bob\x97" was "bob\uFFFD" after a restart and at every
		// other replica, revoking another subject.
		return fmt.Errorf("%w: issuer and value must be UTF-8", ErrInvalid)
	case kindIndex(e.Kind) < 0:
		return fmt.Errorf("%w: kind %q is not one of jti, sid, sub, client_id, issuer", ErrInvalid, e.Kind)
	case e.Kind == KindIssuer && e.Value != "":
		return fmt.Errorf("%w: an issuer entry has no value", ErrInvalid)
	case e.Kind != KindIssuer && e.Value == "":
		return fmt.Errorf("%w: a %s entry needs a value", ErrInvalid, e.Kind)
	case (e.Kind == KindJTI || e.Kind == KindSID) && !e.IssuedBefore.IsZero():
		return fmt.Errorf("%w: issued_before applies to sub, client_id and issuer entries only", ErrInvalid)
	}
	return nil
}

// maxCutoffAhead bounds how far after its entry's creation a cut-off may
// be: the largest issuer leeway, so that a logout token's iat or a SET's
// event_timestamp from an identity provider whose clock runs ahead (within
// its leeway) is kept as the provider meant it.
const maxCutoffAhead = 10 * time.Minute

// expiryMargin is how much longer than the retention an entry is kept: a
// token is accepted until its exp plus the leeway, and its iat may be up
// to the leeway ahead of the entry's creation (a jti or sid entry names
// it whatever its iat), so a token of max_lifetime (≤ retention) may be
// accepted until creation + retention + 2 × leeway. The largest leeway
// twice covers every issuer.
const expiryMargin = 2 * maxCutoffAhead

// stamp completes e as a store stores it at now: an ID when it has none,
// CreatedAt, IssuedBefore = now for a cut-off kind without one, clamped to
// [1970, now + maxCutoffAhead] (a cut-off far ahead would refuse tokens
// issued long after the entry was made; 1970 is a time the index's
// nanoseconds hold), and ExpiresAt = the later of now and IssuedBefore,
// plus retention: the index keeps a name's latest cut-off with its expiry,
// which holds only while a later cut-off never expires earlier. Times are
// in UTC.
func stamp(e Entry, now time.Time, retention time.Duration) Entry {
	if e.ID == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		e.ID = hex.EncodeToString(b[:])
	}
	now = now.UTC()
	e.CreatedAt, e.ExpiresAt = now, now.Add(retention+expiryMargin)
	if e.IssuedBefore.IsZero() && e.Kind != KindJTI && e.Kind != KindSID {
		e.IssuedBefore = now
	}
	if !e.IssuedBefore.IsZero() {
		e.IssuedBefore = e.IssuedBefore.UTC()
		if limit := now.Add(maxCutoffAhead); e.IssuedBefore.After(limit) {
			e.IssuedBefore = limit
		}
		if epoch := time.Unix(0, 0).UTC(); e.IssuedBefore.Before(epoch) {
			e.IssuedBefore = epoch
		}
		if e.IssuedBefore.After(now) {
			e.ExpiresAt = e.IssuedBefore.Add(retention + expiryMargin)
		}
	}
	return e
}

// atLeastRetention returns e with its expiry extended, when needed, to the
// later of its creation and its issued_before plus retention and the
// margin: an entry stored under a shorter retention (before a restart
// that raised it, or by a replica configured so) otherwise ends while
// tokens it names, accepted under the longer retention's max_lifetime,
// are still valid.
func atLeastRetention(e Entry, retention time.Duration) Entry {
	from := e.CreatedAt
	if e.IssuedBefore.After(from) {
		from = e.IssuedBefore
	}
	if from.IsZero() {
		return e
	}
	if x := from.Add(retention + expiryMargin); x.After(e.ExpiresAt) {
		e.ExpiresAt = x.UTC()
	}
	return e
}
