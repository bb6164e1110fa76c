package server

import (
	"errors"
	"fmt"

	"github.com/jwksverify/jwksverify/verify"
)

// ErrInvalidOptions reports options that [New] or [Middleware] refuse.
var ErrInvalidOptions = errors.New("server: invalid options")

// errNoToken, errAmbiguousToken and errMalformedScheme are the log details
// of requests that carry no token (missing_token: unauthenticated traffic,
// counted apart from broken tokens), more than one, or one in a malformed
// credential (both malformed); the extract stage rejects them.
var (
	errNoToken        = fmt.Errorf("%w: the request carries no token", verify.ErrMissingToken)
	errAmbiguousToken = fmt.Errorf("%w: the request carries more than one token value", verify.ErrMalformed)
	// errMalformedScheme: an Authorization (or token-source) value names
	// the Bearer or DPoP scheme but is not exactly "<scheme> <token>".
	errMalformedScheme = fmt.Errorf("%w: a Bearer or DPoP credential that is not exactly '<scheme> <token>'", verify.ErrMalformed)
	// errDPoPOff: Authorization: DPoP where no issuer has a DPoP
	// constraint (or no DPoP checker): the token would pass an anonymous
	// route unverified, and reach an application that reads it.
	errDPoPOff = fmt.Errorf("%w: a DPoP credential, and DPoP is not enabled here", verify.ErrMalformed)
	// errUnreadBearer: Authorization: Bearer where Authorization is not a
	// token source, or is one with another prefix ("Token "): the token would pass an anonymous route unverified (or
	// beside another source's token), and reach an application that reads
	// it.
	errUnreadBearer = fmt.Errorf("%w: a Bearer credential in Authorization, which no token source reads here", verify.ErrMalformed)
	// errUnreadAuthorization: a token without a scheme in Authorization
	// where Authorization is not a token source: as errUnreadBearer, for
	// an application that takes the header's value, prefix or not.
	errUnreadAuthorization = fmt.Errorf("%w: a token in Authorization, which no token source reads here", verify.ErrMalformed)
	// errClosed: the server was closed ([Server.SetClosed]): nothing keeps
	// its keys or its copy of the revocations current any more.
	errClosed = fmt.Errorf("%w: the service is closed", verify.ErrKeysUnavailable)
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

// Error returns "server: invalid options: Field: Err".
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
