package proxyconfig

import "errors"

// Errors of [FromPlan] and [Write].
var (
	// ErrMismatch: forward_auth.proxy names another preset than the proxy
	// asked for, so jwksverify would read headers this proxy never sets.
	ErrMismatch = errors.New("proxyconfig: forward_auth.proxy names another proxy")
	// ErrProxy: not a proxy this package writes for.
	ErrProxy = errors.New("proxyconfig: unknown proxy")
)
