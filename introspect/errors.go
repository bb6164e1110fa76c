package introspect

import "errors"

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
)
