package server

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/jwksverify/jwksverify/internal/asciifold"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// MiddlewareOptions configure [Middleware].
type MiddlewareOptions struct {
	// TokenSources are tried in order. Empty means
	// [{Header: "Authorization", Prefix: "Bearer "}].
	TokenSources []TokenSource
	// Logger receives one line per rejected token (issuer, kid, class; never
	// the token), at most [DefaultRejectionLogRate] a second for info lines
	// and as many for warn and error lines, with a summary of the rest, as
	// forward-auth logs them: every client of the application can send a
	// bad token. Nil means slog.Default().
	Logger *slog.Logger
	// Revocations, if set, is checked for every token the verifier
	// accepts, as [Options.Revocations] is by forward-auth: a revoked
	// token is 401 revoked, a copy older than its max_staleness 503
	// keys_unavailable. A program that runs the service beside the
	// middleware passes the service's store (service.Service.Revocations),
	// so that a token revoked there is revoked here too. Nil means no
	// revocation check: every token the verifier accepts passes.
	Revocations Revocations
}

// resultKey is the context key of the verified token.
type resultKey struct{}

// Middleware returns HTTP middleware for Go services that embed the
// verifier in-process: a request whose token v accepts reaches next with
// the [verify.Result] in its context ([ResultFromContext]); a request
// without a valid token gets 401 with the RFC 6750 challenge and
// {"valid":false,"error":CLASS}; a request whose issuer has no usable keys
// gets 503. An allowed request that asks for an upgrade to anything but a
// WebSocket reaches next without its Upgrade and HTTP2-Settings headers
// (an h2c upgrade would let the client send more requests, undecided, on
// the connection a reverse proxy joins). Tokens are judged on the
// verifier's clock. The middleware runs
// the verifier and, with [MiddlewareOptions.Revocations], the revocation
// stage; it checks no sender constraint (a DPoP- or certificate-bound token
// passes as a bearer token) and no policy. The middleware is
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
	if err := s.setRevocations(opts.Revocations); err != nil {
		return nil, err
	}
	s.limitRejections(DefaultRejectionLogRate)
	return func(next http.Handler) http.Handler {
		mustHandler("server.Middleware", next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The request is the original one: a query source reads its own
			// query. Nothing else of it is needed (no policy, no binding).
			s.serveDecided(w, r, &Call{Endpoint: EndpointMiddleware, Headers: r.Header, Original: request.Original{RawQuery: r.URL.RawQuery}}, next)
		})
	}, nil
}

// Middleware is the whole pipeline of s — its token sources and bounds,
// the verifier, revocation, the issuers' sender constraints and the
// policies its routes choose — in front of next, an application handler in
// this process, deciding on the request next acts on (no proxy preset: the
// request is the original). An allowed request reaches next with the
// [verify.Result] in its context ([ResultFromContext]) and the configured
// identity headers (claims_to_headers) as /v1/authz answers them, in place
// of any copy the client sent (an empty one is removed), and without a
// Connection header that names one (a reverse proxy in next would remove
// it); a refused one gets
// the answer /v1/authz gives (401 with the challenge, 403, 503), and next
// never runs. Nothing is minted, and a client's copy of the mint header
// (or a CGI twin) is removed. So are an Upgrade to anything but a
// WebSocket and HTTP2-Settings: the request goes on as the HTTP/1.1
// request decided, never as a connection of undecided requests.
//
// The original request is r itself: its method (and method overrides),
// host, path as sent, query, and the scheme of its connection ("https"
// when r.TLS is set, else "http"; a DPoP proof must name it, so an
// application behind a proxy that terminates TLS fails DPoP and should
// take forward-auth instead). A certificate-bound token is held to the
// client certificate of r's TLS connection (none: binding_mismatch, the
// forwarded header is not read over TLS), and on a plain-HTTP request to
// the forwarded header [Options.ClientCert] names, which only a proxy in
// front that sets or removes it may carry. A request whose path or host two readers
// could read differently (an HTTP/2 client's host header, which Go leaves
// in r.Header beside :authority, that is not r.Host) is refused only
// where a policy or a DPoP proof needs it, as forward-auth does; so is one whose r.URL no longer spells
// the path the client sent (r.RequestURI): mount Middleware in front of
// http.StripPrefix and any rewrite, where routes name the paths clients
// send, as forward-auth's do.
//
// A nil next panics here, as http.ServeMux.Handle refuses a nil handler:
// it would otherwise crash each allowed request.
func (s *Server) Middleware(next http.Handler) http.Handler {
	mustHandler("server.Server.Middleware", next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.Admit(w, r, next) })
}

// mustHandler panics, naming who was given it, when next is nil: a
// middleware of a nil handler is the program's mistake, told where it is
// written rather than at each allowed request.
func mustHandler(who string, next http.Handler) {
	if next == nil {
		panic(who + ": nil handler")
	}
}

// Admit decides r with s's whole pipeline, as [Server.Middleware] does,
// and serves next when it is allowed; otherwise it writes the refusal and
// next never runs. It is Middleware for a caller that picks the server per
// request (service.Service.Middleware: the current generation's).
func (s *Server) Admit(w http.ResponseWriter, r *http.Request, next http.Handler) {
	o, err := request.FromRequest(r)
	c := &Call{Endpoint: EndpointMiddleware, Headers: r.Header, Original: o, OriginalErr: err, Routed: true}
	if r.TLS != nil {
		// This process terminated the client's TLS: its certificate, or
		// none, is the client's; a forwarded certificate header on such a
		// connection is whatever the client wrote.
		c.ConnectionCert = true
		if len(r.TLS.PeerCertificates) > 0 {
			c.ClientCert = base64.StdEncoding.EncodeToString(r.TLS.PeerCertificates[0].Raw)
		}
	}
	s.serveDecided(w, r, c, next)
}

// serveDecided decides c and serves next with the verified token in its
// context when allowed, else writes the refusal. The configured identity
// headers (claims_to_headers) of an allowed request are the decision's, as
// forward-auth answers them and the proxies copy them over the request's:
// next reads each one set to the claim's value, or absent (an anonymous
// request, another issuer's or policy's header, an unsafe value), and never
// a copy the client sent, nor one of its CGI twins; nor the client's copy of
// the mint header (nothing is minted here); nor an Upgrade to anything but
// a WebSocket, nor HTTP2-Settings.
func (s *Server) serveDecided(w http.ResponseWriter, r *http.Request, c *Call, next http.Handler) {
	d := s.Decide(r.Context(), c)
	if !d.Allowed() {
		s.writeDenial(w, &d)
		return
	}
	ctx := context.WithValue(r.Context(), resultKey{}, d.Result)
	mint := slices.ContainsFunc(s.mintTwins, func(h string) bool { _, ok := r.Header[h]; return ok })
	tunnel := tunnels(r.Header)
	if len(d.headers) == 0 && !mint && !tunnel {
		next.ServeHTTP(w, r.WithContext(ctx))
		return
	}
	r = r.Clone(ctx) // the headers are the caller's: r's own stay as sent
	if tunnel {
		// One request, one decision: an upgrade to anything but a
		// WebSocket (h2c: hypercorn answers it with 101 whatever else the
		// request says, and httputil.ReverseProxy joins the connections)
		// would let the client send the application more requests on
		// this connection, none of them decided. The request goes on as
		// the HTTP/1.1 request decided, as the Caddy file passes it.
		delete(r.Header, "Http2-Settings")
		if slices.ContainsFunc(r.Header["Upgrade"], notWebSocket) {
			delete(r.Header, "Upgrade")
		}
	}
	if mint {
		// Nothing is minted here: a client's copy of the mint header (or
		// a twin) would be read as a minted token, which the proxies drop.
		for _, h := range s.mintTwins {
			delete(r.Header, h)
		}
	}
	for name, v := range d.ClaimHeaders() {
		for _, twin := range HeaderTwins(name) {
			delete(r.Header, twin)
		}
		delete(r.Header, name)
		if v != "" {
			r.Header[name] = []string{v}
			if lists(r.Header["Connection"], name) {
				// A reverse proxy in next (httputil.ReverseProxy) removes
				// each header Connection names, this one included: the
				// application would read no identity instead of this one.
				delete(r.Header, "Connection")
			}
		}
	}
	next.ServeHTTP(w, r)
}

// lists reports whether one of the comma-separated lists vs (Connection's
// values) names name, compared ignoring ASCII case as httputil.ReverseProxy
// does (Header.Del canonicalizes ASCII only).
func lists(vs []string, name string) bool {
	for _, v := range vs {
		for f := range strings.SplitSeq(v, ",") {
			if asciifold.EqualFold(strings.Trim(f, " \t"), name) {
				return true
			}
		}
	}
	return false
}

// tunnels reports whether h holds an upgrade next must not see: an
// Upgrade value other than "websocket" (in any case), or HTTP2-Settings.
func tunnels(h http.Header) bool {
	_, settings := h["Http2-Settings"]
	return settings || slices.ContainsFunc(h["Upgrade"], notWebSocket)
}

// notWebSocket reports whether an Upgrade value is anything but exactly
// "websocket" (in any ASCII case, as net/http and the application's
// WebSocket library read it: "webſocket" is not one).
func notWebSocket(v string) bool { return !asciifold.EqualFold(v, "websocket") }

// ResultFromContext returns the verified token that [Middleware] put in
// ctx, and whether there is one. The Result is shared: do not modify it.
func ResultFromContext(ctx context.Context) (*verify.Result, bool) {
	res, ok := ctx.Value(resultKey{}).(*verify.Result)
	return res, ok && res != nil
}
