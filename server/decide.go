package server

import (
	"cmp"
	"context"
	"net/http"

	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// This file is the one road every decision takes: [Server.Decide] runs the
// stages in order, each in its own file — extract (the credential),
// verify, revocation, bind (sender constraints), authorize (the policy),
// mint (the upstream's token) — then renders
// the answer and records it (metrics and the log line, observe.go). A front
// end (forward-auth, Envoy over HTTP and gRPC, the JSON API, /introspect,
// Middleware) only builds a [Call] and writes the [Decision].

// Headers reads a request's headers. http.Header satisfies it;
// server/extauthz adapts Envoy's header map to it. Implementations must be
// safe for concurrent reads; the server never writes through it.
type Headers interface {
	// Values returns every value of the header named key (a canonical
	// name, "Authorization"), each as sent, in order; nil when absent. The
	// slice is read, never modified.
	Values(key string) []string
}

// Call is what a front end read of one request: where the credential is,
// the original request, the policy that decides it, and how.
type Call struct {
	// Endpoint labels the metrics and the log line: one of [Endpoints]. It
	// changes nothing else.
	Endpoint string
	// Headers are the request's headers: the token sources
	// ([Options.TokenSources]), Authorization: DPoP and the DPoP proofs
	// (when an issuer has a DPoP constraint), and the client certificate
	// header ([Options.ClientCert]) are read there. Nil means the front end
	// read the credential itself: Token, DPoP and Proofs.
	Headers Headers
	// Token is the credential when Headers is nil; "" means none.
	Token string
	// DPoP reports, when Headers is nil, that Token came as
	// Authorization: DPoP with Proofs (the /v1/verify "dpop" member).
	DPoP   bool
	Proofs []string
	// ReadErr, if set, says why the front end could not read the
	// credential (a body over [Options.MaxBodyBytes]): the decision is its
	// rejection.
	ReadErr error
	// ClientCert is the client certificate in a forwarded form (URL-escaped
	// PEM or base64 DER) when the front end has it itself (gRPC's
	// attributes.source.certificate, /v1/verify's "client_cert"). Empty
	// means the header [Options.ClientCert] names, read from Headers.
	ClientCert string
	// ConnectionCert reports that the front end terminated the client's
	// TLS connection itself (Middleware over r.TLS): ClientCert is that
	// connection's certificate, "" when the client presented none, and the
	// header [Options.ClientCert] names is never read (on a connection
	// from the client it is the client's word).
	ConnectionCert bool
	// Original is the original request, resolved once by the front end:
	// the policy is chosen by it, a query token source reads its RawQuery,
	// and a DPoP proof must name it. OriginalErr says why it is not known
	// (request.ErrMissing, request.ErrAmbiguousPath). A zero Original with
	// a nil OriginalErr is not known either (request.ErrMissing).
	Original    request.Original
	OriginalErr error
	// Policy names the policy that decides (/v1/policy/<name>, gRPC
	// context_extensions, /v1/verify "policy"); an unknown name is
	// forbidden. Empty means none, unless Routed.
	Policy string
	// Routed asks for the policy the routes (and default_policy) choose for
	// Original, when policies or a proxy preset are configured: forward-auth.
	// False, with no Policy, runs no policy: any valid token passes.
	Routed bool
	// SkipBinding leaves the issuers' sender constraints unchecked. Only
	// /introspect sets it: its caller gets the cnf claim and holds the
	// proof. It MUST NOT be set by a front end that admits the request.
	SkipBinding bool
	// Explain records each sender-binding check in [Decision.Steps].
	Explain bool
	// IDToken, if not nil, asks for an ID token checked with these inputs
	// ([verify.Verifier.VerifyIDTokenAt]): only /v1/verify sets it. An ID
	// token has no sender constraint: the binding stage is skipped. Nil
	// means an access token, the only kind every other front end accepts.
	IDToken *verify.IDTokenChecks
	// Mint asks for the token minted for the upstream when the call is
	// allowed under a policy that mints ([Options.MintPolicies]):
	// forward-auth and gRPC set it, /v1/verify when asked ("mint": true).
	// An ID token (IDToken set) is never minted from.
	Mint bool
}

// original returns the original request of c, or why it is not known.
func (c *Call) original() (request.Original, error) {
	if c.OriginalErr == nil && c.Original == (request.Original{}) {
		return request.Original{}, request.ErrMissing
	}
	return c.Original, c.OriginalErr
}

// Decide decides one call at one reading of the server's clock: the
// verifier judges the token at it, the latency starts from it. It records
// the decision in [Options.Metrics] and logs one line per rejected or
// forbidden request (never the token). It is safe for concurrent use, does
// not modify c, and blocks only as long as the verifier does (a bounded
// unknown-kid refresh, an introspection call).
func (s *Server) Decide(ctx context.Context, c *Call) Decision {
	now := s.now()
	cred := s.extract(c)
	var pol policyStage
	s.choosePolicy(c, &pol)
	var d Decision
	var bc bindCounts
	switch {
	case s.closed.Load():
		d = s.rejection(errClosed, cred.missing)
	case cred.missing && pol.anonymous:
		d = Decision{Status: http.StatusOK, Issuer: UnknownIssuer, Anonymous: true, headers: s.identity, RemoveAuthorization: s.stripAuthz}
	case cred.err != nil:
		d = s.rejection(cred.err, cred.missing)
	default:
		res, err := s.verify(ctx, cred.token, now, &pol, c.IDToken)
		if err == nil {
			err = s.revocation(res, now)
		}
		var steps []verify.Step
		if err == nil && c.IDToken == nil {
			steps, err = s.bind(ctx, c, &cred, res, now, &bc)
		}
		s.verdict(&d, res, err, steps)
		if d.Allowed() {
			s.authorizeTraced(ctx, &d, &pol)
		}
		if c.Mint && c.IDToken == nil && d.Allowed() {
			// Minted tokens are access tokens, minted from access tokens
			// only (never from an ID token).
			s.mint(&d, &pol, cred.token, now)
		}
	}
	if c.Mint && d.Allowed() && d.minted == nil && s.minter != nil && s.mintHeader != "Authorization" {
		d.unminted = s.mintHeader
	}
	if c.Mint && d.Allowed() {
		d.twins = s.answerTwins
	}
	d.Policy, d.authorized = cmp.Or(d.forbiddenBy, pol.name), pol.run
	if d.forbiddenBy != "" {
		// The policy of another method the request runs as (HEAD as GET, a
		// method override) refused it: the label and the log line name it,
		// as the 403's challenge and Decision.Policy do.
		pol.label = d.forbiddenBy
	}
	s.render(&d)
	s.observe(ctx, c, &d, &pol, &bc, now, cred.token)
	return d
}
