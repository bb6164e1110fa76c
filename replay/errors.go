package replay

import (
	"errors"
	"fmt"
)

// Errors returned by the package, each wrapped with detail; match them with
// errors.Is.
var (
	// ErrFull: the memory store holds MaxEntries proofs that have not
	// expired. Forgetting one would let it be replayed, so new proofs are
	// refused until entries expire.
	ErrFull = errors.New("replay: memory store is full")
	// ErrInvalidOptions reports options that [NewMemory] or [NewRedis]
	// refuse.
	ErrInvalidOptions = errors.New("replay: invalid options")
)

// OptionError is an option that [NewMemory], [NewRedis], [CheckMaxEntries] or [CheckRedisOptions] refuses: the
// field of the options it is about, as a Go path ("MaxEntries",
// "Algorithms[2]"; empty when the refusal concerns several fields), and
// why. It matches [ErrInvalidOptions] and Err with errors.Is, so that a
// program that reads its options from a file (package config) names the
// file's key by Field, never by the message.
type OptionError struct {
	Field string
	Err   error
}

// Error returns "replay: invalid options: Field: Err".
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
