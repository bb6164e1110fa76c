package server

import (
	"errors"
	"fmt"

	"github.com/jwksverify/jwksverify/verify"
)

// ErrInvalidOptions reports options that [New] or [Middleware] refuse.
var ErrInvalidOptions = errors.New("server: invalid options")

// errNoToken, errAmbiguousToken and errMalformedScheme are the log details
// of requests that carry no token, more than one, or one in a malformed
// credential: each is rejected as malformed (the extract stage).
var (
	errNoToken        = fmt.Errorf("%w: the request carries no token", verify.ErrMalformed)
	errAmbiguousToken = fmt.Errorf("%w: the request carries more than one token value", verify.ErrMalformed)
	// errMalformedScheme: an Authorization (or token-source) value names
	// the Bearer or DPoP scheme but is not exactly "<scheme> <token>".
	errMalformedScheme = fmt.Errorf("%w: a Bearer or DPoP credential that is not exactly '<scheme> <token>'", verify.ErrMalformed)
)
