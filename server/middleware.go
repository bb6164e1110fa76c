package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/jwksverify/jwksverify/request"
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
// gets 503. Tokens are judged on the verifier's clock. The middleware is
// safe for concurrent use and blocks only as long as v.Verify does.
//
// Middleware returns an error matching [ErrInvalidOptions] when v is nil or
// opts are invalid (a token source with none or several of header, cookie
// and query).
func Middleware(v *verify.Verifier, opts MiddlewareOptions) (func(http.Handler) http.Handler, error) {
	s, err := newCore(v, opts.TokenSources, opts.Logger)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The request is the original one: a query source reads its own
			// query. Nothing else of it is needed (no policy, no binding).
			d := s.Decide(r.Context(), &Call{Endpoint: EndpointMiddleware, Headers: r.Header, Original: request.Original{RawQuery: r.URL.RawQuery}})
			if !d.Allowed() {
				s.writeDenial(w, &d)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), resultKey{}, d.Result)))
		})
	}, nil
}

// ResultFromContext returns the verified token that [Middleware] put in
// ctx, and whether there is one. The Result is shared: do not modify it.
func ResultFromContext(ctx context.Context) (*verify.Result, bool) {
	res, ok := ctx.Value(resultKey{}).(*verify.Result)
	return res, ok && res != nil
}
