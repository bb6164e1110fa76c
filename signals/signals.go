// Package signals turns the revocation signals an identity provider sends
// into revocation entries ([revoke.Entry]): OpenID Connect Back-Channel
// Logout 1.0 logout tokens, and Security Event Tokens (RFC 8417) of the
// Shared Signals Framework (CAEP 1.0, RISC 1.0) pushed to it (RFC 8935) or
// polled by a [Poller] (RFC 8936).
//
// A [Receiver] checks each token with the issuer's cached keys and allowed
// algorithms ([verify.Verifier.VerifySigned]), then with the rules of its
// kind: a logout token is never a SET, and neither is ever an access token.
// Its jti is used once, through the same atomic replay store as DPoP
// proofs' (a key of its own domain), and the entries it names are stored
// through a [revoke.Adder] before the receiver answers: an answer of
// success means stored. A token that breaks a rule revokes nothing.
package signals

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/jwksverify/jwksverify/internal/loglimit"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/verify"
)

// RevokeMode says what a back-channel logout revokes.
type RevokeMode string

// The revoke modes of a back-channel logout.
const (
	// RevokeSession revokes the session (a sid entry) when the logout
	// token names one, else the subject's tokens issued before it.
	RevokeSession RevokeMode = "session"
	// RevokeSubject revokes the subject's tokens issued before the logout
	// token (a sid entry only when it names no subject).
	RevokeSubject RevokeMode = "subject"
)

// ParseRevokeMode reads a revoke mode: "session" (also ""), or "subject".
func ParseRevokeMode(s string) (RevokeMode, error) {
	switch RevokeMode(s) {
	case "", RevokeSession:
		return RevokeSession, nil
	case RevokeSubject:
		return RevokeSubject, nil
	}
	return "", fmt.Errorf("%q is not one of session, subject", s)
}

// Logout is an issuer's back-channel logout setting.
type Logout struct {
	// Audiences: a logout token's aud must hold one of them (the client
	// ids the IdP sends logout tokens for). Required.
	Audiences []string
	// Revoke says what a logout revokes. Zero means [RevokeSession].
	Revoke RevokeMode
}

// SSF is an issuer's Shared Signals setting.
type SSF struct {
	// Audiences: a SET's aud must hold one of them. Required.
	Audiences []string
	// PushBearer, if not empty, is the bearer token a transmitter pushes
	// this issuer's SETs with (RFC 8935): it names the issuer. Empty means
	// no push for the issuer.
	PushBearer string
}

// Issuer is the signals setting of one configured issuer. Logout and SSF
// may not both be nil.
type Issuer struct {
	// Issuer is the configured issuer ([verify.Issuer.Issuer]): tokens
	// must carry it as iss exactly.
	Issuer string
	// Logout, if set, accepts the issuer's back-channel logout tokens.
	Logout *Logout
	// SSF, if set, accepts the issuer's SETs.
	SSF *SSF
}

// ReplayStore remembers used jtis. Use reports whether key is fresh and
// remembers it for ttl, atomically (dpop.ReplayStore; package replay
// implements it). It must be safe for concurrent use; an error means it
// could not answer.
type ReplayStore interface {
	Use(ctx context.Context, key [32]byte, ttl time.Duration, now time.Time) (fresh bool, err error)
}

// Releaser is a [ReplayStore] that can forget a key: the receiver releases
// the jti of a token whose entries it could not store, so that the sender's
// retry (the same SET, redelivered by a poll) is taken. Package replay's
// stores implement it.
type Releaser interface {
	Release(ctx context.Context, key [32]byte) error
}

// Peeker is a [ReplayStore] that can tell whether a key is in use without
// using it. With one, the receiver marks a token's jti stored once its
// entries are, and takes a replay for a replay only when that mark is
// there: a jti another receiver used but has not stored (it may still
// fail, and give the jti back) is [ErrUnavailable], so that a poller does
// not acknowledge a SET nobody stored. Package replay's stores implement
// it.
type Peeker interface {
	Used(ctx context.Context, key [32]byte, now time.Time) (bool, error)
}

// Metrics counts the events received, by issuer (the configured name, or
// "" when a token named none), event (a short name such as
// "caep/session-revoked", "backchannel-logout", "other", or "unknown" for a
// token refused before its events were read) and result ("applied",
// "ignored", "unsupported", "invalid", "replayed", "unavailable"). It must
// be safe for concurrent use.
type Metrics interface {
	SignalEvent(issuer, event, result string)
}

// Options configure a [Receiver].
type Options struct {
	// Verifier checks signatures with the issuers' cached keys. Required.
	Verifier *verify.Verifier
	// Issuers are the issuers that send signals; each must be one of the
	// verifier's. At least one is required.
	Issuers []Issuer
	// Replay remembers the jtis of logout tokens and SETs. Required.
	Replay ReplayStore
	// Store stores the entries. Required.
	Store revoke.Adder
	// JTITTL is how long a jti is remembered at least (longer for a token
	// whose exp is later), and the age (from its iat) beyond which a
	// logout token is refused. Zero means [DefaultJTITTL].
	JTITTL time.Duration
	// Metrics counts events. Nil means none.
	Metrics Metrics
	// Logger receives one line per token refused and per event applied
	// or not (issuer, event, result; never the token). Nil means
	// slog.Default().
	Logger *slog.Logger
	// RefusalLogRate bounds the "token refused" lines per second (the
	// back-channel logout endpoint takes unauthenticated requests): zero
	// means loglimit.DefaultRate, negative means no limit. The lines past
	// it are counted in one "signal refusals not logged" line; the metrics
	// count every refusal.
	RefusalLogRate int
}

// DefaultJTITTL is how long a jti is remembered by default: the default
// retention of a revocation entry.
const DefaultJTITTL = 24 * time.Hour

// Receiver checks logout tokens and SETs and stores the entries they name.
// Build it with [New]; it is safe for concurrent use and holds no
// goroutine.
type Receiver struct {
	v       *verify.Verifier
	issuers map[string]*Issuer
	push    []pushBearer // the issuers that take pushed SETs
	replay  ReplayStore
	store   revoke.Adder
	ttl     time.Duration
	metrics Metrics
	log     *slog.Logger
	refusal *loglimit.Limiter // the "token refused" lines
	// unstored bounds the warn lines of tokens not stored (keys, replay
	// store or revocation store could not answer): a logout token naming
	// an issuer whose keys are unusable is one before any signature
	// check, so anyone could write them at their request rate. Warn lines
	// have an allowance of their own, as the server's rejections do.
	unstored *loglimit.Limiter
}

// pushBearer is an issuer's push bearer token, hashed: compared in
// constant time over equal-length digests.
type pushBearer struct {
	issuer string
	sum    [32]byte
}

// New checks opts and returns a Receiver.
func New(opts Options) (*Receiver, error) {
	switch {
	case opts.Verifier == nil:
		return nil, invalidOption("Verifier", "required")
	case opts.Replay == nil:
		return nil, invalidOption("Replay", "required")
	case opts.Store == nil:
		return nil, invalidOption("Store", "required")
	case opts.JTITTL < 0:
		return nil, invalidOption("JTITTL", "negative")
	}
	if err := CheckIssuers(opts.Issuers); err != nil {
		return nil, err
	}
	// configured: the verifier's issuers, and whether each takes signals:
	// VerifySigned refuses every token of a {tenantid} template, a SPIFFE
	// trust domain or SkipIssuerCheck (a signal names one issuer exactly).
	configured := map[string]bool{}
	for _, is := range opts.Verifier.Issuers() {
		configured[is.Issuer] = is.TakesSignals()
	}
	r := &Receiver{
		v: opts.Verifier, issuers: map[string]*Issuer{}, replay: opts.Replay, store: opts.Store,
		ttl: cmp.Or(opts.JTITTL, DefaultJTITTL), metrics: opts.Metrics, log: cmp.Or(opts.Logger, slog.Default()),
		refusal:  loglimit.New(opts.RefusalLogRate, "signal refusals not logged"),
		unstored: loglimit.New(opts.RefusalLogRate, "signals not stored, not logged"),
	}
	for i, is := range opts.Issuers {
		if takes, ok := configured[is.Issuer]; !ok {
			return nil, invalidOption(fmt.Sprintf("Issuers[%d].Issuer", i), "%q is not one of the verifier's issuers", is.Issuer)
		} else if !takes {
			return nil, invalidOption(fmt.Sprintf("Issuers[%d].Issuer", i), "%q is a {tenantid} template, a SPIFFE trust domain or skips the issuer check: it takes no signals", is.Issuer)
		}
		r.issuers[is.Issuer] = &opts.Issuers[i]
		if is.SSF != nil && is.SSF.PushBearer != "" {
			r.push = append(r.push, pushBearer{is.Issuer, sha256.Sum256([]byte(is.SSF.PushBearer))})
		}
	}
	return r, nil
}

// MinPushBearerBytes is the shortest push bearer token accepted.
const MinPushBearerBytes = 16

// CheckIssuers reports whether [New] accepts issuers (without the
// verifier): at least one; distinct, non-empty issuer names; each with
// Logout or SSF; audiences non-empty without empty entries; a known revoke
// mode; push bearers of at least [MinPushBearerBytes], distinct across
// issuers. An error wraps [ErrInvalidOptions] and names the field.
func CheckIssuers(issuers []Issuer) error {
	if len(issuers) == 0 {
		return invalidOption("Issuers", "at least one is required")
	}
	seen := map[string]bool{}
	bearers := map[string]bool{}
	for i, is := range issuers {
		path := fmt.Sprintf("Issuers[%d]", i)
		switch {
		case is.Issuer == "":
			return invalidOption(path+".Issuer", "empty")
		case seen[is.Issuer]:
			return invalidOption(path+".Issuer", "%q is repeated", is.Issuer)
		case is.Logout == nil && is.SSF == nil:
			return invalidOption(path, "neither Logout nor SSF is set")
		}
		seen[is.Issuer] = true
		if l := is.Logout; l != nil {
			if err := checkAudiences(path+".Logout.Audiences", l.Audiences); err != nil {
				return err
			}
			if _, err := ParseRevokeMode(string(l.Revoke)); err != nil {
				return invalidOption(path+".Logout.Revoke", "%w", err)
			}
		}
		if s := is.SSF; s != nil {
			if err := checkAudiences(path+".SSF.Audiences", s.Audiences); err != nil {
				return err
			}
			if b := s.PushBearer; b != "" {
				if len(b) < MinPushBearerBytes {
					return invalidOption(path+".SSF.PushBearer", "%d bytes; at least %d are required", len(b), MinPushBearerBytes)
				}
				if bearers[b] {
					return invalidOption(path+".SSF.PushBearer", "the same as another issuer's: the bearer names the issuer")
				}
				bearers[b] = true
			}
		}
	}
	return nil
}

func checkAudiences(field string, auds []string) error {
	if len(auds) == 0 {
		return invalidOption(field, "at least one is required")
	}
	if j := slices.Index(auds, ""); j >= 0 {
		return invalidOption(field, "entry %d is empty", j)
	}
	return nil
}

// PushIssuer returns the issuer whose push bearer token is bearer, and
// whether there is one. Every issuer's token is compared, in constant time
// over SHA-256 digests, whatever matches.
func (r *Receiver) PushIssuer(bearer string) (string, bool) {
	sum := sha256.Sum256([]byte(bearer))
	found := ""
	for _, p := range r.push {
		if subtle.ConstantTimeCompare(sum[:], p.sum[:]) == 1 {
			found = p.issuer
		}
	}
	return found, found != ""
}

// Logouts reports whether some issuer takes back-channel logout tokens;
// Pushes whether some issuer takes pushed SETs.
func (r *Receiver) Logouts() bool {
	for _, is := range r.issuers {
		if is.Logout != nil {
			return true
		}
	}
	return false
}

// Pushes reports whether some issuer takes pushed SETs.
func (r *Receiver) Pushes() bool { return len(r.push) > 0 }

// jtiKey is the replay store's key of a logout token's or a SET's jti at
// issuer: SHA-256 over a domain of its own and both strings, each
// length-prefixed, so that it is never a DPoP proof's key
// (dpop.ReplayKey) nor another pair's, and the store never holds the jti.
func jtiKey(issuer, jti string) [32]byte {
	h := sha256.New()
	h.Write([]byte("jwksverify signal jti\x00"))
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

// storedKey is the key of the mark that the entries of the token whose
// jti key is key are stored.
func storedKey(key [32]byte) [32]byte {
	return sha256.Sum256(append([]byte("jwksverify signal stored\x00"), key[:]...))
}

// commit uses the jti of a checked token once and stores its entries. A
// jti already used is [ErrReplayed] — with a [Peeker] replay store, only
// once the receiver that used it marked its entries stored, and
// [ErrUnavailable] until then; a store that cannot take the entries
// releases the jti again (when the replay store can) and is
// [ErrUnavailable]. It returns the entries as stored.
func (r *Receiver) commit(ctx context.Context, s *verify.Signed, entries []revoke.Entry, now time.Time) ([]revoke.Entry, error) {
	key := jtiKey(s.ConfiguredIssuer, s.ID)
	// At least until iat + the TTL (an iat ahead of now within the leeway
	// adds to it), and a leeway more: a logout token older than that is
	// refused (logoutEntries), so a replay finds its jti or is refused by
	// its age. The leeway because a shared store (Redis) expires the jti
	// on its own clock, and a replica whose clock is behind by up to the
	// leeway (the skew it is there for) still takes the token for as long.
	ttl := addSat(max(r.ttl, s.IssuedAt.Add(r.ttl).Sub(now)), s.Leeway)
	if s.HasExpiresAt {
		// Saturating: an exp centuries ahead makes exp − now the largest
		// Duration, and adding the leeway to it wrapped around to a
		// negative one, which kept the jti for the TTL alone.
		ttl = max(ttl, addSat(s.ExpiresAt.Sub(now), s.Leeway))
	}
	fresh, err := r.replay.Use(ctx, key, ttl, now)
	if err != nil {
		// The use may have been applied (Redis: the key set, then WAIT
		// short of its replicas, or the reply lost to the timeout): give
		// the jti back, or the sender's retry is 503 until it expires.
		r.release(ctx, s, key)
		return nil, fmt.Errorf("%w: the replay store did not answer: %w", ErrUnavailable, err)
	}
	peek, _ := r.replay.(Peeker)
	if !fresh {
		if peek == nil {
			return nil, ErrReplayed
		}
		switch done, err := peek.Used(ctx, storedKey(key), now); {
		case err != nil:
			return nil, fmt.Errorf("%w: the replay store did not answer: %w", ErrUnavailable, err)
		case !done:
			return nil, fmt.Errorf("%w: its jti is in use and its entries are not stored yet (another replica may be storing them, or may give the jti back); retry", ErrUnavailable)
		}
		return nil, ErrReplayed
	}
	stored := make([]revoke.Entry, 0, len(entries))
	for _, e := range entries {
		got, err := r.store.Add(ctx, e)
		if err != nil {
			r.release(ctx, s, key)
			return nil, fmt.Errorf("%w: the revocation store did not take the entry: %w", ErrUnavailable, err)
		}
		stored = append(stored, got)
	}
	if peek != nil {
		// Without ctx's cancellation (a poller closed by a reload, a
		// transmitter that gave up): the entries are stored, so is the mark.
		if _, err := r.replay.Use(context.WithoutCancel(ctx), storedKey(key), ttl, now); err != nil {
			// The entries are stored: nothing is lost, but until the jti
			// expires a retry of the token is answered 503, not replayed.
			r.log.Warn("signal stored but not marked stored",
				"issuer", s.ConfiguredIssuer, "consequence", "a retry of the same token is answered unavailable until its jti expires", "err", err)
		}
	}
	return stored, nil
}

// addSat is a + b for a Duration b >= 0, at most the largest Duration.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// release gives key back when the replay store can (see [Releaser]): after
// a failed store, and after a Use that failed but may have been applied.
// In the second case the key may be another receiver's, whose entries a
// retry then stores a second time: the same revocation, listed twice —
// where a jti spent without its entries would lose them.
func (r *Receiver) release(ctx context.Context, s *verify.Signed, key [32]byte) {
	if rel, ok := r.replay.(Releaser); ok {
		if rerr := rel.Release(context.WithoutCancel(ctx), key); rerr != nil {
			r.log.Warn("signal jti not released after a store failure",
				"issuer", s.ConfiguredIssuer, "consequence", "a retry of the same token is answered unavailable until its jti expires", "err", rerr)
		}
	}
}

// count records one event's result.
func (r *Receiver) count(issuer, event, result string) {
	if r.metrics != nil {
		r.metrics.SignalEvent(issuer, event, result)
	}
}

// verifyErr sorts an error of VerifySigned: keys that could not be read,
// and a kid not looked for in a fresh copy of the set
// ([verify.ErrKidNotRefreshed]), are [ErrUnavailable]; an issuer not
// configured or not the expected one is [ErrInvalidIssuer]; a key or
// signature that does not fit is [ErrInvalidKey]; anything else is
// [ErrInvalidRequest].
func verifyErr(err error) error {
	switch verify.Class(err) {
	case "keys_unavailable":
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case "unknown_kid":
		if errors.Is(err, verify.ErrKidNotRefreshed) {
			// A key the issuer may have just published: a 400 would lose
			// the revocation for good (senders do not send a refused
			// token again), 503 has it sent again.
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return fmt.Errorf("%w: %w", ErrInvalidKey, err)
	case "unknown_issuer", "wrong_issuer":
		return fmt.Errorf("%w: %w", ErrInvalidIssuer, err)
	case "bad_signature", "alg_not_allowed":
		return fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
}

// checkTimes holds a verified token's iat (required) and exp (when
// present) to now, with the issuer's leeway.
func checkTimes(s *verify.Signed, now time.Time) error {
	switch {
	case !s.HasIssuedAt:
		return invalid(ErrInvalidRequest, "iat is required")
	case s.IssuedAt.After(now.Add(s.Leeway)):
		return invalid(ErrInvalidRequest, "iat %s is ahead of now %s by more than the leeway %s",
			s.IssuedAt.Format(time.RFC3339), now.UTC().Format(time.RFC3339), s.Leeway)
	case s.HasExpiresAt && !now.Add(-s.Leeway).Before(s.ExpiresAt):
		return invalid(ErrInvalidRequest, "expired at %s", s.ExpiresAt.Format(time.RFC3339))
	case s.HasNotBefore && s.NotBefore.After(now.Add(s.Leeway)):
		return invalid(ErrInvalidRequest, "not valid before %s", s.NotBefore.Format(time.RFC3339))
	case s.ID == "":
		return invalid(ErrInvalidRequest, "jti is required")
	}
	return nil
}

// audienceHas reports whether aud holds one of want.
func audienceHas(aud, want []string) bool {
	for _, a := range aud {
		if slices.Contains(want, a) {
			return true
		}
	}
	return false
}
