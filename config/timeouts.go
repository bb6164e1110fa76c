package config

import (
	"cmp"
	"time"

	"github.com/jwksverify/jwksverify/jwks"
)

// Timeouts are the limits of the HTTP server (net/http.Server fields).
type Timeouts struct {
	// ReadHeader bounds reading a request's headers (slowloris).
	ReadHeader time.Duration
	// Read bounds reading a whole request, body included, and waiting for
	// its answer: net/http cancels a request's context when it passes.
	Read time.Duration
	// Write bounds the request from the end of its headers to the end of
	// its response.
	Write time.Duration
	// Idle bounds a keep-alive connection between requests.
	Idle time.Duration
	// Wait bounds the unknown-kid waits of one request, all its tokens
	// together: a command gives every request with a body (a batch may hold
	// tokens of every issuer) a context with this deadline.
	Wait time.Duration
}

const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second // reading a request, without waits
	writeTimeout      = 10 * time.Second // writing a response
	idleTimeout       = 120 * time.Second
	// waitMargin is the CPU time of a request besides its waits (a batch
	// of the largest tokens, verified one by one).
	waitMargin = time.Second
)

// httpTimeouts derives the HTTP server's timeouts from the longest
// unknown-kid wait of each issuer (SPEC "Calm under a hanging IdP": no
// server timeout is shorter than the longest wait a request can have, so
// that every request gets a status, never a closed connection). One token
// waits at most its issuer's wait; a batch may wait once for each issuer, so
// a request waits at most their sum (Timeouts.Wait enforces it, whatever a
// batch meets). Read and Write add that to their own bounds.
func httpTimeouts(waits []time.Duration) Timeouts {
	wait := waitMargin
	for _, w := range waits {
		wait += w
	}
	return Timeouts{
		ReadHeader: readHeaderTimeout,
		Read:       readTimeout + wait,
		Write:      readTimeout + wait + writeTimeout,
		Idle:       idleTimeout,
		Wait:       wait,
	}
}

// longestWait bounds how long a request may wait for one token of the
// issuer is: for an unknown-kid refresh, nothing with a local source, at
// most UnknownKidWait with a remote one (zero: at most
// jwks.DefaultUnknownKidWait); for an opaque token, when the issuer
// introspects, the introspection call (introspect.Options.LongestWait). A
// token is one or the other: the longer of the two.
func longestWait(is Issuer) time.Duration {
	var d time.Duration
	if o := is.JWKS; o.URL != "" || o.Discovery {
		d = cmp.Or(o.UnknownKidWait, jwks.DefaultUnknownKidWait)
	}
	if is.Introspection != nil {
		d = max(d, is.Introspection.LongestWait())
	}
	return d
}
