package policy

import (
	"errors"
	"fmt"

	"github.com/jwksverify/jwksverify/verify"
)

// ErrInvalid matches every error of [New].
var ErrInvalid = errors.New("policy: invalid configuration")

// Errors of [Set.Choose]. Each matches verify.ErrForbidden: the request is
// refused whatever the token.
var (
	ErrUnknownPolicy = fmt.Errorf("%w: the request names a policy that is not configured", verify.ErrForbidden)
	ErrUnrouted      = fmt.Errorf("%w: routes choose the policy, and the proxy did not forward the original request", verify.ErrForbidden)
	ErrAmbiguous     = fmt.Errorf("%w: the original request is ambiguous (its path, host or a method override)", verify.ErrForbidden)
)
