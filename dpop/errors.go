package dpop

import (
	"errors"
	"fmt"

	"github.com/jwksverify/jwksverify/verify"
)

// Errors returned by the package, each wrapped with detail; match them with
// errors.Is. A proof that fails a check wraps verify.ErrInvalidDPoPProof.
var (
	// ErrInvalidOptions reports options that [New] or [CheckOptions] refuse.
	ErrInvalidOptions = errors.New("dpop: invalid options")
	// ErrReplayed is the invalid_dpop_proof of a proof whose jti was
	// already used: errors.Is matches both it and
	// verify.ErrInvalidDPoPProof.
	ErrReplayed = fmt.Errorf("%w: jti was already used (a replayed proof)", verify.ErrInvalidDPoPProof)
)

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

// Error returns "dpop: invalid options: Field: Err".
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
