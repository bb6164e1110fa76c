package server

import (
	"errors"
	"fmt"

	"github.com/jwksverify/jwksverify/verify"
)

// ErrInvalidOptions reports options that [New] or [Middleware] refuse.
var ErrInvalidOptions = errors.New("server: invalid options")

// errNoToken and errAmbiguousToken are the log details of requests that
// carry no token, or more than one: both are rejected as malformed (the
// extract stage).
var (
	errNoToken        = fmt.Errorf("%w: the request carries no token", verify.ErrMalformed)
	errAmbiguousToken = fmt.Errorf("%w: the request carries more than one token value", verify.ErrMalformed)
)
