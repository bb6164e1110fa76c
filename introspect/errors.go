package introspect

import (
	"errors"
	"fmt"
)

// Errors returned by the package, each wrapped with detail; match them with
// errors.Is. Errors of [Client.Introspect] also wrap verify.ErrInactive or
// verify.ErrKeysUnavailable, the classes the verifier answers with.
var (
	// ErrInvalidOptions reports options that [New] refuses.
	ErrInvalidOptions = errors.New("introspect: invalid options")
	// ErrBadAnswer reports an introspection response that is not an RFC
	// 7662 answer (not a JSON object, no boolean active, a bad exp).
	ErrBadAnswer = errors.New("introspect: malformed answer")
	// ErrUpstream reports an introspection call that got no answer: the
	// endpoint unreachable or unknown, a status other than 200, a body too
	// large, the client secret unreadable.
	ErrUpstream = errors.New("introspect: no answer from the introspection endpoint")
	// ErrOverloaded reports a call not made because Options.MaxConcurrent
	// calls were in flight for all of Options.MaxWait.
	ErrOverloaded = errors.New("introspect: too many introspection calls in flight")
	// ErrClosed reports a call on a closed [Client].
	ErrClosed = errors.New("introspect: client closed")
	// ErrShared reports a failure of the shared cache's Redis: the answer
	// is keys_unavailable (never a stale answer, never an allow).
	ErrShared = errors.New("introspect: the shared cache (Redis) failed")
)

// errNoTurn reports a shared-cache flight that did not get to ask the
// endpoint within its budget: other flights held the token's Redis lock
// (another replica's call, or a chain of them refused at their own
// max_concurrent), or the wait left its own call no time. Like
// ErrOverloaded it says nothing about the endpoint: a stale answer serves
// only while the endpoint is known not to answer (Client.endpointDown).
var errNoTurn = errors.New("introspect: the token's shared call did not get its turn")

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

// Error returns "introspect: invalid options: Field: Err".
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
