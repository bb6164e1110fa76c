package signals

import (
	"errors"
	"fmt"
)

// The error families. Every error of [Receiver.Logout] and [Receiver.Receive]
// matches exactly one of them with errors.Is: the token is refused (400,
// nothing revoked) or the receiver could not decide or store (503, nothing
// acknowledged; the sender retries).
var (
	// ErrInvalid matches every refusal of a logout token or a SET.
	ErrInvalid = errors.New("signals: invalid token")
	// ErrUnavailable matches every failure to decide or to store: the
	// issuer's keys, the replay store or the revocation store could not
	// answer.
	ErrUnavailable = errors.New("signals: unavailable")
)

// The refusals, by the error code of RFC 8935 §2.4 that a SET receiver
// answers (a logout token is always invalid_request, BCL §2.8). Each wraps
// [ErrInvalid]; [Code] returns the code.
var (
	// ErrInvalidRequest: malformed, stale, replayed or otherwise invalid.
	ErrInvalidRequest error = &codeError{"invalid_request"}
	// ErrInvalidKey: the signature does not verify with a key of the
	// issuer's set (an unknown kid, a bad signature, an algorithm not
	// allowed for it).
	ErrInvalidKey error = &codeError{"invalid_key"}
	// ErrInvalidIssuer: the iss is not the issuer that sent it (the push
	// bearer's, the polled stream's) or not a configured issuer.
	ErrInvalidIssuer error = &codeError{"invalid_issuer"}
	// ErrInvalidAudience: the aud holds none of the issuer's ssf.audiences.
	ErrInvalidAudience error = &codeError{"invalid_audience"}
)

// ErrReplayed is the refusal of a jti already used (it wraps
// [ErrInvalidRequest]): a poller acknowledges such a SET, since it was
// stored when it was first received.
var ErrReplayed = fmt.Errorf("%w: jti already used", ErrInvalidRequest)

// ErrInvalidOptions reports options that [New] or [NewPoller] refuse.
var ErrInvalidOptions = errors.New("signals: invalid options")

// codeError is a refusal sentinel carrying its RFC 8935 code.
type codeError struct{ code string }

func (e *codeError) Error() string { return e.code }

// Is makes every code match [ErrInvalid].
func (e *codeError) Is(target error) bool { return target == ErrInvalid }

// Code returns the RFC 8935 error code of a refusal err ("invalid_key",
// …), "invalid_request" for any other refusal, and "" when err is nil or
// not a refusal.
func Code(err error) string {
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	if errors.Is(err, ErrInvalid) {
		return "invalid_request"
	}
	return ""
}

// invalid is a refusal of code with the detail of format.
func invalid(code error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", code, fmt.Sprintf(format, args...))
}

// OptionError is an option that [New] or [NewPoller] refuses: the field
// of the options it is about, as a Go path ("Issuers[1].Logout.Audiences";
// empty when the refusal concerns several fields), and why. It matches
// [ErrInvalidOptions] and Err with errors.Is, so that a program that reads
// its options from a file (package config) names the file's key by Field,
// never by the message.
type OptionError struct {
	Field string
	Err   error
}

// Error returns "signals: invalid options: Field: Err".
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
