package mtls

import "errors"

// Errors of this package; each means "no usable certificate".
var (
	// ErrNoCertificate: the header or attribute is empty.
	ErrNoCertificate = errors.New("mtls: no client certificate")
	// ErrMalformed: the value is not a certificate in a known form, it is
	// too large, or an XFCC header has no single element with a Hash.
	ErrMalformed = errors.New("mtls: malformed client certificate")
)
