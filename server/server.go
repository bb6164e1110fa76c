// Package server answers verification requests from other services over
// HTTP: JSON verify, RFC 7662 introspection, forward-auth for nginx, Traefik,
// Caddy and Envoy, health and readiness, and, for Go services that embed the
// verifier, [Middleware]. It reads keys only through the verifier and the
// issuers' cache.Keys; it never fetches keys itself.
//
// It links no gRPC, Envoy or Prometheus code: the Envoy ext_authz gRPC
// service and gRPC health live in server/extauthz, over the decision API
// ([Server.Decide], [Call], [Decision]); Prometheus metrics
// live in server/metrics, behind the [Metrics] interface, and /metrics is
// served when [Options.MetricsHandler] is set.
package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/loglimit"
	mintpkg "github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
	"github.com/jwksverify/jwksverify/verify"
)

// Defaults applied by [New] to zero-valued options.
const (
	DefaultMaxBodyBytes = 65536
	DefaultMaxBatch     = 100
)

// TokenSource says where a request carries its token. Exactly one of Header,
// Cookie and Query is set.
type TokenSource struct {
	// Header is a request header name; Prefix, if set, must start its value
	// (compared case-insensitively, e.g. "Bearer ") and is removed.
	Header, Prefix string
	// Cookie is a cookie name.
	Cookie string
	// Query is a URL query parameter name, read only from the original
	// request: the one [Options.Proxy] names (New refuses a query source
	// without a proxy preset), Envoy gRPC's attributes.request.http, or, for
	// [Middleware], the request itself.
	Query string
}

// IntrospectionClient is a caller allowed to use /introspect, authenticated
// by HTTP Basic (id:secret) or Bearer (secret). ID and Secret must both be
// non-empty, and IDs distinct.
type IntrospectionClient struct {
	// ID is the client identifier (the Basic user name). Required; it must
	// not contain a colon.
	ID string
	// Secret is the client secret (the Basic password, or the Bearer
	// credential). Required. It is kept only as a hash and never logged.
	Secret string
}

// Options configure a [Server].
type Options struct {
	// Verifier decides every token. Required.
	Verifier *verify.Verifier
	// TokenSources are tried in order by forward-auth. Empty means
	// [{Header: "Authorization", Prefix: "Bearer "}].
	TokenSources []TokenSource
	// ClaimsToHeaders maps, per issuer (the configured issuer string), a
	// claim name to the response header that carries its value on an allowed
	// forward-auth request. The verifier must extract the same claims
	// (verify.Issuer.ExtractClaims); New refuses a claim it does not extract.
	// Nil means no claim headers.
	ClaimsToHeaders map[string]map[string]string
	// StripAuthorization adds "x-envoy-auth-headers-to-remove: authorization"
	// to allowed forward-auth responses (and removes it over gRPC). False
	// leaves the Authorization header to the upstream.
	StripAuthorization bool
	// Proxy is the forward_auth.proxy preset: where forward-auth finds the
	// original request (method, host, path, query) it decides. [request.None]
	// means it is not known.
	Proxy request.Proxy
	// Policies are the authorization policies and routes that forward-auth
	// (/v1/authz by routes, /v1/policy/<name>), gRPC Check and /v1/verify
	// with "policy" decide by. Nil means none: any valid token passes
	// (wave-1 behaviour). Routes need Proxy.
	Policies *policy.Set
	// ResourceMetadata, if set, is served as RFC 9728 protected resource
	// metadata, and every 401 names it (resource_metadata="URL"). Nil means
	// neither.
	ResourceMetadata *ResourceMetadata
	// SenderConstraints maps a configured issuer's name to its sender
	// constraints (DPoP, certificate-bound tokens). Nil, or an issuer
	// absent from it, means none: its tokens are bearer tokens, whatever
	// their cnf claim.
	SenderConstraints map[string]SenderConstraint
	// DPoP checks the DPoP proofs of the issuers whose DPoP constraint is
	// not off; it is required then. Nil means Authorization: DPoP is not
	// read.
	DPoP *dpop.Checker
	// ClientCert says where forward-auth finds the client certificate, for
	// certificate-bound tokens. The zero value reads none (gRPC Check
	// reads attributes.source.certificate whatever it says).
	ClientCert ClientCertSource
	// Signals, if not nil, receives revocation signals: POST
	// /v1/logout/backchannel when one of its issuers takes back-channel
	// logout tokens, POST /v1/ssf/events when one takes pushed SETs (on the
	// main listener: the identity provider calls them). Nil means neither
	// is served (404).
	Signals *signals.Receiver
	// IntrospectionClients may call /introspect. Empty means every call to
	// /introspect is refused with 401.
	IntrospectionClients []IntrospectionClient
	// APIAuth makes /v1/verify and /v1/verify/batch answer 401
	// (invalid_client) to a caller that presents neither an introspection
	// client's credentials (HTTP Basic id:secret, or Bearer secret) nor a TLS
	// client certificate that the listener verified (r.TLS.VerifiedChains:
	// the listener's ClientCAs accepted it). Forward-auth is unaffected.
	// False means those endpoints answer anyone who reaches them.
	APIAuth bool
	// SeparateAdmin moves /healthz, /readyz, /v1/issuers and /metrics off
	// [Server.Handler] (404 there) to [Server.AdminHandler] only, for a
	// listener that only operators and probes reach. False means Handler
	// serves them too.
	SeparateAdmin bool
	// MaxBodyBytes bounds request bodies (also a whole batch): at least
	// the verifier's MaxTokenBytes, at most [MaxMaxBodyBytes]. Zero means
	// 64 KiB, or the verifier's MaxTokenBytes when that is larger.
	MaxBodyBytes int64
	// MaxBatch bounds the tokens of one /v1/verify/batch, at most
	// [MaxMaxBatch]. Zero means 100.
	MaxBatch int
	// Metrics records every decision (server/metrics implements it with
	// Prometheus). Nil means no metrics.
	Metrics Metrics
	// MetricsHandler serves GET and HEAD /metrics (server/metrics'
	// Handler). Nil means /metrics is not served (404).
	MetricsHandler http.Handler
	// Logger receives one line per rejected token (issuer, kid, class; never
	// the token). Nil means slog.Default().
	Logger *slog.Logger
	// Now returns the current time. It is read once per decided token and
	// that reading is the one the verifier judges at (verify.VerifyAt), the
	// latency starts from and the log limiter uses; readiness and
	// /v1/issuers read it too. Nil means the verifier's clock
	// ((*verify.Verifier).Now).
	Now func() time.Time
	// Version is reported by /healthz. Empty means "dev".
	Version string
	// Tracer, if not nil, records a server span per HTTP request (and per
	// gRPC call, server/extauthz) that continues the trace of the request's
	// W3C traceparent header, the parent of the verifier's spans. Pass the
	// same tracer provider's tracer to verify.Options.Tracer and
	// jwks.Options.Tracer. Nil means no spans, at no cost.
	Tracer trace.Tracer
	// Propagator reads the incoming trace context. Nil means W3C Trace
	// Context (traceparent, tracestate).
	Propagator propagation.TextMapPropagator
	// ConfigHash identifies the configuration the server was built from
	// (cmd: a hash of the file); /v1/issuers reports it as config_hash.
	// Empty means it is left out.
	ConfigHash string
	// RejectionLogRate bounds the "token rejected" log lines written per
	// second, with one allowance for info lines and another for warn and
	// error lines (junk tokens never hide a keys_unavailable line), and
	// apart from them the "introspection client authentication failed"
	// ones; lines past it are counted and summarized in one line
	// when their second is over (by a timer: it does not wait for the next
	// line). Zero means [DefaultRejectionLogRate] (20); negative means no
	// limit; at most [MaxRejectionLogRate]. Metrics count every rejection regardless.
	RejectionLogRate int
	// Revocations, if set, is checked for every verified token after the
	// verifier (cache hits and introspection answers too): a revoked token
	// is the class revoked; a copy older than its max_staleness answers
	// keys_unavailable and makes the server not ready. Its admin API
	// (POST, GET /v1/revocations, DELETE /v1/revocations/{id}) is served
	// by [Server.AdminHandler] only, to callers that authenticate as
	// [Options.APIAuth] callers do. Nil means no revocation.
	Revocations Revocations
	// Minter mints the tokens of the policies in MintPolicies for the
	// upstream (package mint), and its public keys are served at
	// [JWKSPath]. Nil means nothing is minted and JWKSPath is not served.
	Minter *mintpkg.Minter
	// MintPolicies maps a policy name (of Policies) to what the tokens
	// minted under it hold. A policy absent from it mints nothing. Nil
	// means none mints.
	MintPolicies map[string]*mintpkg.Policy
}

// Server is the HTTP front end over one [verify.Verifier]. Build it with
// [New]; serve [Server.Handler]. A Server holds no goroutines and needs no
// Close (a summary of log lines dropped by the rate limit is written by a
// timer that fires once, within a second); it is safe for concurrent use.
//
// A process that is about to stop calls [Server.SetDraining] first, so that
// readiness (/readyz, gRPC health) turns away load balancers and Envoy while
// the server still answers every request.
type Server struct {
	v   *verify.Verifier
	log *slog.Logger
	// logRate bounds the rejection lines at info (a flood of bad tokens),
	// logRateWarn those at warn and error (could not decide, a fault), each
	// on its own allowance so that junk tokens never hide them; nil: every
	// line is logged.
	logRate, logRateWarn *loglimit.Limiter
	// clientLogRate bounds the lines of refused introspection clients.
	clientLogRate *loglimit.Limiter
	now           func() time.Time
	version       string

	sources []tokenSource
	// readsBearer reports that a token source reads a Bearer credential
	// in Authorization: Authorization with no prefix or one that starts
	// "Bearer " ("Token " reads none).
	readsBearer bool
	// readsAuthorization reports that a token source reads Authorization
	// (with any prefix).
	readsAuthorization bool
	issuers            []*issuerInfo          // configured order
	byName             map[string]*issuerInfo // by configured issuer name
	stripAuthz         bool
	proxy              request.Proxy
	clients            []introspectionClient
	maxBody            int64
	maxBatch           int
	rejected           map[string]denial // class -> precomputed 401
	unavailable        map[string]denial // class -> precomputed 503
	noTokenDeny        denial
	static             staticHeaders

	policies       *policy.Set // nil: none
	authorizes     bool        // forward-auth reads the original request and runs policies
	forbidAny      denial      // 403 when no policy could be chosen
	forbidden      map[string]denial
	policyHeaders  map[string][]claimHeader // policy name -> its claims_to_headers
	identity       []claimHeader            // every configured identity header, for anonymous requests
	policyMetrics  PolicyMetrics            // nil: none
	resource       *resourceMetadata        // nil: none
	tracer         trace.Tracer             // nil: no spans
	propagator     propagation.TextMapPropagator
	configHash     string
	constraints    map[string]SenderConstraint // nil: no issuer has one
	dpop           *dpop.Checker
	certHeader     string // canonical; "" none
	xfcc           bool
	bindingMetrics BindingMetrics  // nil: none
	minter         *mintpkg.Minter // nil: no minting
	mintHeader     string          // canonical
	mintTwins      []string        // the mint header and its CGI twins, unless it is Authorization
	// answerTwins are the CGI twins (lower case) of every identity header
	// and of the mint header (unless Authorization), which an allowed
	// answer that sets the upstream's headers removes (Decision.TwinsToRemove).
	answerTwins []string
	// envoyRemove is forward-auth's X-Envoy-Auth-Headers-To-Remove for the
	// Envoy preset, by [unminted][RemoveAuthorization]: answerTwins, then
	// the mint header and authorization when they go.
	envoyRemove  [2][2][]string
	mintPolicies map[string]*mintpkg.Policy // policy name -> what it mints

	metrics        Metrics // nil: none
	metricsHandler http.Handler
	handler        http.Handler
	adminHandler   http.Handler
	apiAuth        bool
	signals        *signals.Receiver // nil: no signal endpoints
	revocations    Revocations       // nil: none
	revIndex       *revoke.Index     // revocations.Index()
	revRetention   time.Duration     // revocations' retention, 0 unknown: a token living longer is lifetime_exceeded

	// closed is set by SetClosed: every decision is refused.
	closed    atomic.Bool
	drainOnce sync.Once
	// drained is closed by SetDraining: readiness then says no, and open
	// gRPC health Watch streams end.
	drained chan struct{}
}

// New validates opts, applies defaults and returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Verifier == nil {
		return nil, fmt.Errorf("%w: Verifier is required", ErrInvalidOptions)
	}
	if err := CheckOptions(opts, opts.Verifier.MaxTokenBytes()); err != nil {
		return nil, err
	}
	s, err := newCore(opts.Verifier, opts.TokenSources, opts.Logger)
	if err != nil {
		return nil, err
	}
	if opts.Now != nil {
		s.now = opts.Now
	}
	s.limitRejections(opts.RejectionLogRate)
	s.clientLogRate = loglimit.New(opts.RejectionLogRate, "introspection client failures not logged")
	s.version = opts.Version
	if s.version == "" {
		s.version = "dev"
	}
	s.stripAuthz = opts.StripAuthorization
	s.proxy = opts.Proxy
	s.maxBody = opts.MaxBodyBytes
	if s.maxBody == 0 {
		// The default, or the largest token when that is larger: a body
		// must hold one token (CheckOptions holds an explicit value to it).
		s.maxBody = max(DefaultMaxBodyBytes, int64(opts.Verifier.MaxTokenBytes()))
	}
	s.maxBatch = opts.MaxBatch
	if s.maxBatch == 0 {
		s.maxBatch = DefaultMaxBatch
	}
	if err := s.setClaimHeaders(opts.ClaimsToHeaders, opts.Verifier.Issuers()); err != nil {
		return nil, err
	}
	s.clients = newClients(opts.IntrospectionClients)
	if err := s.setPolicies(opts.Policies, opts.Verifier.Issuers(), s.proxy); err != nil {
		return nil, err
	}
	if err := s.setResourceMetadata(opts.ResourceMetadata); err != nil {
		return nil, err
	}
	s.metrics, s.metricsHandler = opts.Metrics, opts.MetricsHandler
	s.apiAuth = opts.APIAuth
	s.signals = opts.Signals
	if err := s.setRevocations(opts.Revocations); err != nil {
		return nil, err
	}
	s.policyMetrics, _ = opts.Metrics.(PolicyMetrics)
	if err := s.setBinding(opts); err != nil {
		return nil, err
	}
	if err := s.setMint(opts); err != nil {
		return nil, err
	}
	if err := s.checkAnswerHeaders(); err != nil {
		return nil, err
	}
	s.setAnswerTwins()
	s.tracer, s.propagator, s.configHash = opts.Tracer, opts.Propagator, opts.ConfigHash
	if s.propagator == nil {
		s.propagator = propagation.TraceContext{}
	}
	sel := allRoutes
	if opts.SeparateAdmin {
		sel = apiRoutes
	}
	s.handler, s.adminHandler = s.routes(sel), s.routes(adminRoutes)
	if s.tracer != nil {
		s.handler = s.traced(s.handler)
	}
	return s, nil
}

// newCore builds what forward-auth and the middleware share: token sources,
// the issuers and the precomputed denials, on the verifier's clock. It has
// no metrics.
func newCore(v *verify.Verifier, sources []TokenSource, log *slog.Logger) (*Server, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: Verifier is required", ErrInvalidOptions)
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Server{v: v, log: log, now: v.Now, drained: make(chan struct{})}
	var err error
	if s.sources, err = newTokenSources(sources); err != nil {
		return nil, err
	}
	for _, src := range s.sources {
		s.readsBearer = s.readsBearer || (src.header == "Authorization" && readsBearer(src.prefix))
		s.readsAuthorization = s.readsAuthorization || src.header == "Authorization"
	}
	if s.issuers, s.byName, err = newIssuers(v.Issuers()); err != nil {
		return nil, err
	}
	s.buildDenials("")
	s.static = staticHeaders{
		noStore:    []string{"no-store"},
		stripAuthz: []string{"authorization"},
		json:       []string{"application/json; charset=utf-8"},
		nosniff:    []string{"nosniff"},
	}
	return s, nil
}

// staticHeaders are header values shared by every response of the hot
// path, so that setting them does not allocate. Each slice has len == cap:
// a handler that appends to one gets a copy (net/http never modifies them).
type staticHeaders struct {
	noStore, stripAuthz, json, nosniff []string
}

// Handler returns the HTTP handler serving every endpoint of the server,
// but the admin endpoints when [Options.SeparateAdmin] is set.
func (s *Server) Handler() http.Handler { return s.handler }

// AdminHandler returns the HTTP handler serving the admin endpoints only:
// /healthz, /readyz, /v1/issuers and /metrics (when
// [Options.MetricsHandler] is set); every other path is 404.
func (s *Server) AdminHandler() http.Handler { return s.adminHandler }

// Verifier returns the verifier the server decides with.
func (s *Server) Verifier() *verify.Verifier { return s.v }

// DPoP returns the server's DPoP proof checker ([Options.DPoP]; nil: none),
// for its metrics.
func (s *Server) DPoP() *dpop.Checker { return s.dpop }

// MaxBodyBytes returns the bound of a request body ([Options.MaxBodyBytes],
// default applied): a gRPC server in front of it takes the same bound.
func (s *Server) MaxBodyBytes() int64 { return s.maxBody }

// Drained returns a channel that [Server.SetDraining] closes: long-lived
// calls (gRPC health Watch streams) end on it.
func (s *Server) Drained() <-chan struct{} { return s.drained }

// SetDraining marks the server as shutting down, for good: /readyz answers
// 503 {"ready":false,"draining":true}, the gRPC health service reports
// NOT_SERVING, and open health Watch streams receive NOT_SERVING and end
// (so that grpc.Server.GracefulStop does not wait for them). Every other
// endpoint keeps answering as before: call it, give load balancers time to
// notice, then shut the listeners down. It is safe for concurrent use, does
// not block, and may be called more than once.
func (s *Server) SetDraining() {
	s.drainOnce.Do(func() { close(s.drained) })
}

// SetClosed marks the server as closed, for good: what kept its keys and
// its copy of the revocations current (the fetchers, the revocation store)
// has stopped, so it decides nothing any more. Every call to [Server.Decide]
// (so every front end, the Middleware included) is refused 503
// keys_unavailable, and readiness answers as after [Server.SetDraining].
// A handler of a closed service left mounted (a ServeMux cannot unmount
// one) fails closed instead of admitting tokens on frozen state. It is
// safe for concurrent use and may be called more than once.
func (s *Server) SetClosed() {
	s.closed.Store(true)
	s.SetDraining()
}

// Draining reports whether [Server.SetDraining] has been called.
func (s *Server) Draining() bool {
	select {
	case <-s.drained:
		return true
	default:
		return false
	}
}

// Ready reports whether every issuer has a usable key set now (and, with
// [Options.Revocations], a copy of the revocations no older than its
// max_staleness), and if not, which issuers (their configured strings)
// are not ready: with a stale copy, every one. It does not block. It
// does not look at [Server.Draining]: a draining server may still be Ready.
func (s *Server) Ready() (bool, []string) {
	now := s.now()
	var notReady []string
	stale := s.revocationsStale(now)
	for _, is := range s.issuers {
		if stale || !is.keys.Load().Usable(now) {
			notReady = append(notReady, is.name)
		}
	}
	return len(notReady) == 0, notReady
}
