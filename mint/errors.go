package mint

import (
	"errors"
	"fmt"
)

// The errors of package mint. Match them with errors.Is.
var (
	// ErrInvalidOptions reports options that [New], [Check] or [NewPolicy]
	// refuse (an [OptionError] matches it).
	ErrInvalidOptions = errors.New("mint: invalid options")
	// ErrKeysFile reports a keys file that cannot be used: unreadable, not
	// a JWKS, a key that is public-only, inconsistent, too weak or of an
	// unsupported type, or no key of the signing kid. [New] and [Check]
	// return it wrapped in an [OptionError] of field KeysFile;
	// [Minter.Reload] returns it and keeps the keys it had.
	ErrKeysFile = errors.New("mint: bad keys file")
	// ErrSign reports a signature that could not be made (the random
	// source failed): a fault, not a verdict. A server answers it as it
	// answers keys that are unavailable (503).
	ErrSign = errors.New("mint: signing failed")
)

// OptionError is an option that [New], [Check] or [NewPolicy] refuses: the
// field of the options it is about ("KeysFile", "Claims[tenant]") and why.
// It matches [ErrInvalidOptions] and Err with errors.Is, so that a program
// that reads its options from a file (package config) names the file's key
// by Field, never by the message.
type OptionError struct {
	Field string
	Err   error
}

// Error returns "mint: invalid options: Field: Err".
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
