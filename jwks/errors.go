package jwks

import (
	"errors"
	"fmt"
	"strconv"
)

// Errors returned by the package. Each is wrapped with detail; match them
// with errors.Is.
var (
	// ErrInvalidOptions reports options that [New] or [Fetch] refuse.
	ErrInvalidOptions = errors.New("jwks: invalid options")
	// ErrInsecureURL reports a URL (configured, discovered or redirected to)
	// that breaks the transport rule: https, or http only for loopback hosts
	// unless InsecureAllowHTTP.
	ErrInsecureURL = errors.New("jwks: insecure URL")
	// ErrTooManyRedirects reports a fetch that was redirected more than
	// [DefaultMaxRedirects] times.
	ErrTooManyRedirects = errors.New("jwks: too many redirects")
	// ErrIssuerMismatch reports a discovery document whose issuer is not
	// exactly the configured issuer (RFC 8414 §3.3).
	ErrIssuerMismatch = errors.New("jwks: discovery issuer mismatch")
	// ErrStatus reports an HTTP answer other than 200 (or 304 to a
	// conditional request).
	ErrStatus = errors.New("jwks: unexpected HTTP status")
	// ErrTooLarge reports a body or file larger than MaxBytes, or a fetched
	// key set with more than MaxKeys keys.
	ErrTooLarge = errors.New("jwks: document too large")
	// ErrMalformed reports a JWKS or discovery document that cannot be read
	// at all (not JSON, not an object, no "keys" array, nested too deep).
	// A single broken key is not an error: it is skipped and reported.
	ErrMalformed = errors.New("jwks: malformed document")
	// ErrNoKeys reports a key set with no usable key (empty, or every key
	// skipped). A fetch that yields it keeps the last good set.
	ErrNoKeys = errors.New("jwks: no usable keys")
	// ErrSuppressed reports an unknown-kid refresh that was not made: the
	// per-interval budget is spent, the kid was just proven absent, or the
	// fetcher has only StaticKeys and no source to refresh. It is returned
	// at once, never waited for.
	ErrSuppressed = errors.New("jwks: refresh suppressed")
	// ErrRefreshPending reports an unknown-kid refresh that did not complete
	// within UnknownKidWait of its start: the caller stopped waiting (or,
	// arriving later, did not wait at all). The refresh goes on in the
	// background and publishes what it finds.
	ErrRefreshPending = errors.New("jwks: key refresh still in progress")
	// ErrClosed reports a call on a closed [Fetcher].
	ErrClosed = errors.New("jwks: fetcher closed")
	// ErrRetired reports an unknown-kid refresh asked of a retired
	// [Fetcher] ([Fetcher.Retire]): it was not made, and the kid was not
	// looked for.
	ErrRetired = errors.New("jwks: fetcher retired")
)

// nKeys is "1 key" or "n keys", for messages.
func nKeys(n int) string {
	if n == 1 {
		return "1 key"
	}
	return strconv.Itoa(n) + " keys"
}

// OptionError is an option that [New], [Fetch] or [CheckOptions] refuses: the
// field of the options it is about, as a Go path ("MaxEntries",
// "Algorithms[2]"; empty when the refusal concerns several fields), and
// why. It matches [ErrInvalidOptions] and Err with errors.Is, so that a
// program that reads its options from a file (package config) names the
// file's key by Field, never by the message.
type OptionError struct {
	Field string
	Err   error
}

// Error returns "jwks: invalid options: Field: Err".
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
