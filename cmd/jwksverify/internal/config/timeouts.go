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

// longestWait bounds how long a request may wait for an unknown-kid
// refresh of the issuer o configures: a local source answers at once, a
// remote one holds a request at most UnknownKidWait (zero: at most
// jwks.DefaultUnknownKidWait).
func longestWait(o jwks.Options) time.Duration {
	if o.URL == "" && !o.Discovery {
		return 0
	}
	return cmp.Or(o.UnknownKidWait, jwks.DefaultUnknownKidWait)
}
