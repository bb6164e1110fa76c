package verify

import (
	"errors"
	"fmt"
	"slices"
)

// The error families. Every error returned by [Verifier.Verify] matches
// exactly one of ErrRejected and ErrUnavailable with errors.Is: a verdict
// (the token is rejected, 401-class) or a failure to decide (no usable keys,
// 503-class). ErrDenied is the third family, of a valid token that an
// authorization policy refuses (403-class); the policy layer returns it.
var (
	// ErrRejected matches every error that means "this token is not valid".
	ErrRejected = errors.New("verify: token rejected")
	// ErrUnavailable matches every error that means "could not decide":
	// the issuer has no usable keys right now.
	ErrUnavailable = errors.New("verify: keys unavailable")
	// ErrDenied matches every error that means "the token is valid, but
	// this request is not allowed".
	ErrDenied = errors.New("verify: request denied")
)

// The error classes of SPEC.md, as sentinels. Errors returned by the verifier
// wrap one of them with detail; match with errors.Is, and get the class word
// with [Class].
var (
	ErrMalformed       error = &classError{"malformed", ErrRejected}
	ErrTokenTooLarge   error = &classError{"token_too_large", ErrRejected}
	ErrAlgNotAllowed   error = &classError{"alg_not_allowed", ErrRejected}
	ErrUnknownIssuer   error = &classError{"unknown_issuer", ErrRejected}
	ErrUnknownKid      error = &classError{"unknown_kid", ErrRejected}
	ErrBadSignature    error = &classError{"bad_signature", ErrRejected}
	ErrExpired         error = &classError{"expired", ErrRejected}
	ErrNotYetValid     error = &classError{"not_yet_valid", ErrRejected}
	ErrWrongIssuer     error = &classError{"wrong_issuer", ErrRejected}
	ErrWrongAudience   error = &classError{"wrong_audience", ErrRejected}
	ErrMissingClaim    error = &classError{"missing_claim", ErrRejected}
	ErrWrongType       error = &classError{"wrong_type", ErrRejected}
	ErrUnsupportedCrit error = &classError{"unsupported_crit", ErrRejected}
	ErrKeysUnavailable error = &classError{"keys_unavailable", ErrUnavailable}

	// Wave 2 classes.

	// ErrForbidden: a valid token that a policy refuses (403).
	ErrForbidden error = &classError{"forbidden", ErrDenied}
	// ErrInactive: an opaque token its authorization server calls inactive.
	ErrInactive error = &classError{"inactive", ErrRejected}
	// ErrInvalidDPoPProof: a DPoP proof (RFC 9449) that fails a check.
	ErrInvalidDPoPProof error = &classError{"invalid_dpop_proof", ErrRejected}
	// ErrBindingMismatch: a sender-constrained token presented without, or
	// with another, proof of possession.
	ErrBindingMismatch error = &classError{"binding_mismatch", ErrRejected}

	// Wave 3 classes.

	// ErrMissingToken: the request carries no token at all (a request
	// without credentials, RFC 6750 §3.1). A token that is there but
	// broken (empty, not a compact JWS, ambiguous) stays ErrMalformed.
	ErrMissingToken error = &classError{"missing_token", ErrRejected}
	// ErrRevoked: a valid token that its issuer (or an operator) revoked,
	// or whose session, subject or client it revoked, before exp (package
	// revoke). The server's revocation stage returns it.
	ErrRevoked error = &classError{"revoked", ErrRejected}
	// ErrLifetimeExceeded: exp − iat is above the issuer's MaxLifetime.
	ErrLifetimeExceeded error = &classError{"lifetime_exceeded", ErrRejected}

	// The ID-token classes ([Verifier.VerifyIDToken]).

	// ErrWrongNonce: the ID token's nonce is not the one given.
	ErrWrongNonce error = &classError{"wrong_nonce", ErrRejected}
	// ErrWrongHash: at_hash or c_hash is not the left half of the hash of
	// the access token or code given.
	ErrWrongHash error = &classError{"wrong_hash", ErrRejected}
	// ErrWrongAZP: azp is none of the client IDs, or absent where the
	// issuer's azp mode requires it.
	ErrWrongAZP error = &classError{"wrong_azp", ErrRejected}
	// ErrWrongACR: acr is none of the acr_values given.
	ErrWrongACR error = &classError{"wrong_acr", ErrRejected}
	// ErrAuthTooOld: auth_time is older than the max_age given, plus leeway.
	ErrAuthTooOld error = &classError{"auth_too_old", ErrRejected}
)

// ErrKidNotRefreshed is wrapped, beside [ErrUnknownKid], by an unknown_kid
// error whose kid was not looked for in a copy of the issuer's set fetched
// for it: the issuer's Refresher declined or failed (the unknown-kid budget
// spent, the refresh still pending past unknown_kid_wait, the fetch
// failed). The same kid may verify once a refresh is made, so a caller
// whose refusal is final (a revocation signal answered 400 is not sent
// again) can answer "try later" instead. A kid absent from a refreshed set,
// or remembered absent from one, does not wrap it.
var ErrKidNotRefreshed = errors.New("no refresh")

// ErrKidAbsent is wrapped by a [Refresher]'s error when no refresh would
// find the kid either: the set has no source to refresh (static keys
// only), or the kid was proven absent from a refresh moments ago. The
// unknown_kid error of such a kid does not wrap [ErrKidNotRefreshed]: a
// revocation signal naming it is refused, not answered "try later" for
// ever.
var ErrKidAbsent = errors.New("kid absent")

// Classes returns every class word, in SPEC order. The slice is the
// caller's to keep or change.
func Classes() []string { return slices.Clone(classes) }

var classes = []string{
	"malformed", "token_too_large", "alg_not_allowed", "unknown_issuer", "unknown_kid",
	"bad_signature", "expired", "not_yet_valid", "wrong_issuer", "wrong_audience",
	"missing_claim", "wrong_type", "unsupported_crit", "keys_unavailable",
	"forbidden", "inactive",
	"invalid_dpop_proof", "binding_mismatch",
	"missing_token",
	"wrong_nonce", "wrong_hash", "wrong_azp", "wrong_acr", "auth_too_old",
	"revoked", "lifetime_exceeded",
}

// classError is a sentinel carrying its class word and its family.
type classError struct {
	class  string
	family error
}

func (e *classError) Error() string { return e.class }

// Is makes every class match its family with errors.Is.
func (e *classError) Is(target error) bool { return target == e.family }

// Error is the verifier's answer for a token it did not accept: every error
// that [Verifier.Verify], [Verifier.VerifyAt], [Verifier.Explain] and
// [Verifier.ExplainAt] return is a *Error. It carries what a caller needs to
// answer, count and log the rejection without reading the token again.
//
// errors.Is(err, ErrExpired) and errors.Is(err, ErrRejected) (or
// ErrUnavailable) match through it, and [Class] returns its class. An Error
// is immutable once returned and may be shared between goroutines.
type Error struct {
	// Class is the SPEC class word ("expired", "keys_unavailable", …),
	// the same as Class(Err). Never empty.
	Class string
	// Issuer is the [Issuer.Issuer] of the configured issuer that the
	// token's iss claim names: the one it routed to, or, when the iss fits a
	// {tenantid} template without matching its tid, that template. It is ""
	// when the token names no configured issuer, or when the check failed
	// before the claims were read (size, structure). The name is configured,
	// never the token's raw iss, so it is safe as a metric label.
	Issuer string
	// Kid is the token's kid header, "" when absent or when the header could
	// not be read. It is unverified and chosen by whoever sent the token:
	// bound its length before logging it.
	Kid string
	// Err is the detail: it wraps the class sentinel (ErrExpired, …) and
	// never contains the token or key material.
	Err error
	// Hint is what an operator needs to fix the configuration or the
	// client, "" when there is nothing to add: for wrong_audience the
	// configured audiences; for unknown_issuer and wrong_issuer the
	// configured issuer the token's iss nearly matches (a trailing '/'
	// more or less); for keys_unavailable of an opaque token, why its
	// introspection gave no answer (the endpoint, its status or the
	// network's error, which Err withholds). It names configuration, so it belongs in logs and in
	// the CLI, never in an answer to the caller (Err's text is that).
	Hint string
}

// Error returns the detail's text.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the detail, so that errors.Is matches the class sentinel
// and its family.
func (e *Error) Unwrap() error { return e.Err }

// Class returns the SPEC class word of err ("expired", "keys_unavailable", …),
// or "" when err is nil or carries no class.
func Class(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Class
	}
	var ce *classError
	if errors.As(err, &ce) {
		return ce.class
	}
	return ""
}

// ErrInvalidOptions reports options out of the bounds [CheckOptions] checks.
var ErrInvalidOptions = errors.New("verify: invalid options")

// OptionError is an option that [New] or [CheckOptions] refuses: the
// field of the options it is about, as a Go path ("MaxEntries",
// "Algorithms[2]"; empty when the refusal concerns several fields), and
// why. It matches [ErrInvalidOptions] and Err with errors.Is, so that a
// program that reads its options from a file (package config) names the
// file's key by Field, never by the message.
type OptionError struct {
	Field string
	Err   error
}

// Error returns "verify: invalid options: Field: Err".
func (e *OptionError) Error() string {
	if e.Field == "" {
		return ErrInvalidOptions.Error() + ": " + e.Err.Error()
	}
	return ErrInvalidOptions.Error() + ": " + e.Field + ": " + e.Err.Error()
}

// Unwrap returns [ErrInvalidOptions] and Err.
func (e *OptionError) Unwrap() []error { return []error{ErrInvalidOptions, e.Err} }

// invalidOption is the [OptionError] of field, with the message of format.
func invalidOption(field, format string, args ...any) error {
	return &OptionError{Field: field, Err: fmt.Errorf(format, args...)}
}
