package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/jwksverify/jwksverify/verify"
)

// MiddlewareOptions configure [Middleware].
type MiddlewareOptions struct {
	// TokenSources are tried in order. Empty means
	// [{Header: "Authorization", Prefix: "Bearer "}].
	TokenSources []TokenSource
	// Logger receives one line per rejected token (issuer, kid, class; never
	// the token). Nil means slog.Default().
	Logger *slog.Logger
}

// resultKey is the context key of the verified token.
type resultKey struct{}

// Middleware returns HTTP middleware for Go services that embed the
// verifier in-process: a request whose token v accepts reaches next with
// the [verify.Result] in its context ([ResultFromContext]); a request
// without a valid token gets 401 with the RFC 6750 challenge and
// {"valid":false,"error":CLASS}; a request whose issuer has no usable keys
// gets 503. The middleware is safe for concurrent use and blocks only as
// long as v.Verify does.
//
// Middleware panics when v is nil or opts are invalid (a token source with
// none or several of header, cookie and query): a wiring mistake found at
// start-up, like regexp.MustCompile.
func Middleware(v *verify.Verifier, opts MiddlewareOptions) func(http.Handler) http.Handler {
	s, err := newCore(v, opts.TokenSources, opts.Logger)
	if err != nil {
		panic(fmt.Sprintf("server.Middleware: %v", err))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d := s.decideRequest(r, endpointMiddleware)
			if !d.allowed() {
				s.writeDenial(w, d)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), resultKey{}, d.res)))
		})
	}
}

// ResultFromContext returns the verified token that [Middleware] put in
// ctx, and whether there is one. The Result is shared: do not modify it.
func ResultFromContext(ctx context.Context) (*verify.Result, bool) {
	res, ok := ctx.Value(resultKey{}).(*verify.Result)
	return res, ok && res != nil
}
