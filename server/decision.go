package server

import (
	"iter"
	"net/http"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/jwksverify/jwksverify/verify"
)

// This file holds the answer of [Server.Decide], shared by every front end
// (forward-auth, the JSON API, introspection, the middleware, and the gRPC
// ext_authz service of server/extauthz), and the labels it is recorded
// under. It carries everything a front end renders: none re-decides.

// Endpoint labels: which front end decided a token. They label the latency
// metric and the log lines; [Metrics] implementations see only these.
const (
	EndpointVerify     = "verify"
	EndpointBatch      = "batch"
	EndpointIntrospect = "introspect"
	EndpointAuthz      = "authz"
	EndpointGRPC       = "grpc"
	EndpointMiddleware = "middleware"
)

// Endpoints returns every endpoint label, in a fixed order. The slice is
// the caller's.
func Endpoints() []string {
	return []string{EndpointVerify, EndpointBatch, EndpointIntrospect, EndpointAuthz, EndpointGRPC, EndpointMiddleware}
}

// Label values of a decision besides the configured issuers and the SPEC
// class words.
const (
	// ClassValid is the class label of an allowed token.
	ClassValid = "valid"
	// UnknownIssuer is the issuer label of a token that names no configured
	// issuer (or that could not be read): metrics and logs never carry a
	// raw iss.
	UnknownIssuer = "unknown"
)

// Metrics records decisions. It is declared here, where it is used;
// server/metrics implements it with Prometheus. Implementations must be safe
// for concurrent use and must not block: Decided runs on every request.
type Metrics interface {
	// Decided records one decided token: the front end (one of
	// [Endpoints]), the issuer label (a configured issuer name or
	// [UnknownIssuer]), the class ([ClassValid] or a SPEC class word) and
	// the time deciding took.
	Decided(endpoint, issuer, class string, elapsed time.Duration)
	// ClientAuthFailed records one /introspect call refused because its
	// client did not authenticate; reason is one of [ClientAuthReasons].
	ClientAuthFailed(reason string)
}

// The reasons of a failed introspection-client authentication, as
// [Metrics.ClientAuthFailed] and the log line name them.
const (
	// ClientAuthMissing: no usable Authorization header (none, several, or
	// another scheme).
	ClientAuthMissing = "missing"
	// ClientAuthUnknownClient: HTTP Basic with an id no client has.
	ClientAuthUnknownClient = "unknown_client"
	// ClientAuthWrongSecret: HTTP Basic with a client's id and another secret.
	ClientAuthWrongSecret = "wrong_secret"
	// ClientAuthBearer: a Bearer secret that is no client's.
	ClientAuthBearer = "bearer"
)

// ClientAuthReasons returns every reason [Metrics.ClientAuthFailed] may be
// given. The slice is the caller's.
func ClientAuthReasons() []string {
	return []string{ClientAuthMissing, ClientAuthUnknownClient, ClientAuthWrongSecret, ClientAuthBearer}
}

// Decision is the outcome of one [Call], with everything a front end needs
// to answer it: allow (200), deny (401), a valid token that a policy refuses
// (403) or could not decide (503). It is a value; its slices are shared
// with the server and must not be modified.
type Decision struct {
	// Status is http.StatusOK, http.StatusUnauthorized,
	// http.StatusForbidden or http.StatusServiceUnavailable. It is decided
	// by the error's family (errors.Is verify.ErrRejected,
	// verify.ErrDenied or verify.ErrUnavailable); an error of no family
	// fails closed as 503.
	Status int
	// Class is the SPEC class word of a denial or a 503; "" when allowed.
	Class string
	// Issuer is the issuer label: the configured issuer name, or
	// [UnknownIssuer].
	Issuer string
	// NoToken reports that the request carried no token at all (RFC 6750
	// §3.1: the challenge then carries no error code).
	NoToken bool
	// Result is the verified token when allowed or forbidden (a valid
	// token a policy refused), else nil. It is shared: do not modify it.
	Result *verify.Result
	// Policy is the name of the policy that decided ("" for none, or the
	// any-token default).
	Policy string
	// Requirement is, for a forbidden decision, the requirement that failed
	// (policy.ReqScopes, …). It tells what the policy requires: show it
	// only to the operator (logs, the CLI), never to the proxy's client.
	Requirement string
	// Anonymous reports a request without a token that an allow_anonymous
	// policy let pass: Result is nil, and ClaimHeaders yields every
	// configured identity header empty.
	Anonymous bool
	// Err is the verifier's error when not allowed (a *verify.Error, or a
	// server error wrapping a class sentinel); its text never holds the
	// token. Nil when allowed.
	Err error
	// Challenge is the WWW-Authenticate value of a 401 or 403 (RFC 6750),
	// "" for an allowed decision or a 503.
	Challenge string
	// Body is the JSON body of a 401 or 503, {"valid":false,"error":CLASS},
	// or of a 403, {"valid":true,"allowed":false,"error":"forbidden"}, and
	// a newline; nil when allowed.
	Body []byte
	// RemoveAuthorization reports, for an allowed decision, that the proxy
	// should drop the Authorization header before the upstream
	// ([Options.StripAuthorization]).
	RemoveAuthorization bool
	// Steps are the sender-constraint checks (DPoP, mTLS binding), in
	// order, when the call asked for them ([Call.Explain]); nil otherwise.
	Steps []verify.Step
	// Minted is the token minted for the upstream when the call asked for
	// it ([Call.Mint]) and the deciding policy mints; "" otherwise.
	// [Decision.MintedHeader] says where the upstream receives it.
	Minted string

	minted     []string // Minted as its header value, shared
	mintHeader string   // the header minted carries it in
	// unminted is the mint header (not Authorization) of an allowed call
	// that asked for minting and got no token in it: a front end that
	// sets the upstream's headers removes the client's own copy.
	unminted string
	twins    []string      // Server.answerTwins, for a call that sets the upstream's headers
	headers  []claimHeader // of the allowed token's issuer (sorted by claim), then every other identity header
	www      []string      // Challenge as a header value, shared
	// forbiddenBy names the policy whose 403 a forbidden decision is
	// answered with ("" none could be chosen: the generic one).
	forbiddenBy string
	// authorized reports that a policy decided (the policy stage ran).
	authorized bool
}

// Allowed reports whether the token was accepted.
func (d Decision) Allowed() bool { return d.Status == http.StatusOK }

// ClaimHeaders yields, for an allowed decision, each claims_to_headers
// header of the token's issuer (or of the deciding policy, when it has its
// own), in claim order, with its canonical name and value, and then every
// other configured identity header (another issuer's, a policy's) empty.
// Every configured header is yielded, with an empty value when the claim is
// absent or its value is not a safe header value (a control character left
// by the verifier's sanitizing): proxies that copy the header then
// overwrite or remove one a client forged, instead of passing it through.
// It yields nothing for a decision that is not allowed.
func (d Decision) ClaimHeaders() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if !d.Allowed() {
			return
		}
		for _, h := range d.headers {
			if !yield(h.header, d.claimValue(h.claim)) {
				return
			}
		}
	}
}

// claimValue is the header value of an extracted claim, or "" when it is
// absent or unsafe.
func (d *Decision) claimValue(claim string) string {
	if d.Result == nil || claim == "" {
		return "" // anonymous, or another issuer's or policy's header
	}
	v := d.Result.Extracted[claim]
	// ValidHeaderFieldValue refuses every control byte but HTAB: CR and LF
	// included (TestAuthzHeaderInjection).
	if !httpguts.ValidHeaderFieldValue(v) {
		return ""
	}
	return v
}
