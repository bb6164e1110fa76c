package request

import (
	"errors"
	"fmt"
)

// Errors of [Proxy.From] and [FromParts]. Both mean the request must be
// denied when anything depends on the original request.
var (
	// ErrMissing: the preset's headers are absent, or present more than once.
	ErrMissing = errors.New("request: original request not forwarded by the proxy")
	// ErrAmbiguous: the original request is one that the application behind
	// the proxy could read differently from jwksverify ([ErrAmbiguousPath],
	// [ErrAmbiguousMethod], [ErrAmbiguousHost]). It is denied whatever the
	// routes say.
	ErrAmbiguous = errors.New("request: ambiguous")
	// ErrAmbiguousPath: the path holds a dot segment ("." or "..", raw or
	// percent-encoded in any spelling), an empty segment ("//"), an encoded
	// '/', a '\' (raw or encoded), a NUL, a raw ';' or '#', or a malformed
	// escape. Servers and routers disagree on what such a path means, so
	// none is routed. It matches [ErrAmbiguous].
	ErrAmbiguousPath = fmt.Errorf("%w path", ErrAmbiguous)
	// ErrAmbiguousMethod: the method is not in upper case (Django and
	// Flask upper-case "get", Go's ServeMux does not), or a method override
	// (a header of [OverrideHeaders], or a _method query parameter) names
	// something that is not a method token, or more than [MaxOverrides]
	// methods. It matches [ErrAmbiguous].
	ErrAmbiguousMethod = fmt.Errorf("%w method", ErrAmbiguous)
	// ErrAmbiguousHost: the host is not exactly a name or an IPv4 address
	// (letters, digits, '-', '_', '.'; no empty label) or a bracketed IPv6
	// address without a zone, followed by nothing or by ':' and at most
	// five digits; or it holds an upper-case letter or a trailing '.',
	// which Go's ServeMux matches against no host pattern while other
	// applications ignore them.
	// nginx reads "admin.example.com:1:2" as admin.example.com, and Unicode
	// case folding reads "\u212Aiosk" as kiosk, while jwksverify would route
	// another host. An IP address in another spelling than its canonical
	// one ("127.1", "[0:0::1]", [CheckIPSpelling]) is ambiguous too. It
	// matches [ErrAmbiguous].
	ErrAmbiguousHost = fmt.Errorf("%w host", ErrAmbiguous)
)
