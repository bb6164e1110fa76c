package proxyconfig

import "errors"

// Errors of [FromPlan] and [Write].
var (
	// ErrMismatch: forward_auth.proxy names another preset than the proxy
	// asked for, so jwksverify would read headers this proxy never sets.
	ErrMismatch = errors.New("proxyconfig: forward_auth.proxy names another proxy")
	// ErrTLS: a listener the file connects to serves TLS, and the files
	// speak plain HTTP (and plaintext gRPC) to jwksverify: every auth
	// call would fail.
	ErrTLS = errors.New("proxyconfig: jwksverify's listener serves TLS")
	// ErrProxy: not a proxy this package writes for.
	ErrProxy = errors.New("proxyconfig: unknown proxy")
)
