package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/jwksverify/jwksverify/verify"
)

// This file holds the decision shared by every front end (forward-auth, the
// JSON API, introspection, the middleware, and the gRPC ext_authz service of
// server/extauthz): the allow/deny/unavailable decision with its metrics and
// log line, and what a front end writes for it. The decision reads the
// verifier's answer (verify.Result, *verify.Error); it never reads the
// token itself.

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

// maxLogField bounds an attacker-chosen string (a kid) in a log line.
const maxLogField = 128

// maxMessage bounds the human message of a rejection in responses and logs.
const maxMessage = 512

// errNoToken and errAmbiguousToken are the log details of forward-auth
// requests that carry no token, or more than one.
var (
	errNoToken        = fmt.Errorf("%w: the request carries no token", verify.ErrMalformed)
	errAmbiguousToken = fmt.Errorf("%w: the request carries more than one token value", verify.ErrMalformed)
	// errMalformedScheme: an Authorization (or token-source) value names
	// the Bearer or DPoP scheme but is not exactly "<scheme> <token>".
	errMalformedScheme = fmt.Errorf("%w: a Bearer or DPoP credential that is not exactly '<scheme> <token>'", verify.ErrMalformed)
)

// Decision is the outcome of one token, with everything a front end needs
// to answer it: allow (200), deny (401), a valid token that a policy refuses
// (403, [Server.AuthorizeRequest]) or could not decide (503). It is a
// value; its slices are shared with the server and must not be modified.
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
	// any-token default); set by [Server.AuthorizeRequest].
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
	// order, when the [Binding] asked for them (Explain); nil otherwise.
	Steps []verify.Step

	headers []claimHeader // of the allowed token's issuer (sorted by claim), then every other identity header
	www     []string      // Challenge as a header value, shared
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
	if !httpguts.ValidHeaderFieldValue(v) || strings.ContainsAny(v, "\r\n") {
		return ""
	}
	return v
}

// Decide verifies token for endpoint (one of [Endpoints]) at one reading of
// the server's clock and returns the decision. It records the decision in
// [Options.Metrics] and logs one line per rejected token (never the token).
// An empty token is a request without credentials: denied as "malformed"
// with NoToken set. It is safe for concurrent use and blocks only as long
// as the verifier does (a bounded unknown-kid refresh).
func (s *Server) Decide(ctx context.Context, endpoint, token string) Decision {
	return s.decideAmong(ctx, endpoint, token, nil, nil)
}

// DecideBound is [Server.Decide] for a token presented with b (nil: as a
// bearer token, with nothing else): once the verifier accepted the token,
// the sender constraints of its issuer ([Options.SenderConstraints]) are
// checked against b, and a failure is denied invalid_dpop_proof or
// binding_mismatch (401), or keys_unavailable (503) when the DPoP replay
// store cannot answer. Introspection never checks them: its caller gets
// the cnf claim and holds the proof. It is safe for concurrent use.
func (s *Server) DecideBound(ctx context.Context, endpoint, token string, b *Binding) Decision {
	return s.decideAmong(ctx, endpoint, token, nil, b)
}

// decideAmong is DecideBound with the issuers an opaque token may be
// introspected at narrowed to issuers (a policy's; nil: every issuer), see
// [verify.Verifier.VerifyAmong].
func (s *Server) decideAmong(ctx context.Context, endpoint, token string, issuers []string, b *Binding) Decision {
	now := s.now()
	if token == "" {
		return s.reject(ctx, endpoint, now, "", errNoToken, true)
	}
	res, err := s.v.VerifyAmong(ctx, token, now, issuers)
	if err != nil {
		return s.reject(ctx, endpoint, now, token, err, false)
	}
	var steps []verify.Step
	if s.constraints != nil && endpoint != EndpointIntrospect {
		if steps, err = s.checkBinding(ctx, token, res, b, now); err != nil {
			d := s.reject(ctx, endpoint, now, token, &verify.Error{Class: verify.Class(err), Issuer: res.ConfiguredIssuer, Kid: res.Kid, Err: err}, false)
			d.Steps = steps
			return d
		}
	}
	is := s.byName[res.ConfiguredIssuer]
	label := is.label()
	if s.metrics != nil {
		s.metrics.Decided(endpoint, label, ClassValid, s.elapsed(now))
	}
	d := Decision{Status: http.StatusOK, Issuer: label, Result: res, RemoveAuthorization: s.stripAuthz, Steps: steps}
	if is != nil {
		d.headers = is.answer
	}
	return d
}

// DecideRequest decides the token that r carries in the configured token
// sources ([Options.TokenSources]), as [Server.Decide] does. A request whose
// first source present holds more than one value, in any form (a repeated
// header; a parameter or cookie repeated, empty or differently escaped,
// split at ';'), is denied "malformed": a proxy and its upstream could each
// read a different one. Only r's source headers and cookies are read, and,
// for a query source, the query of the original request that
// [Options.Proxy] names (none when it is [request.None]; the request's own
// for [Middleware]); its body never is.
func (s *Server) DecideRequest(r *http.Request, endpoint string) Decision {
	from := queryOriginal
	if s.ownQuery {
		from = queryOwn
	}
	return s.decideRequest(r, endpoint, from, "")
}

// DecideWithQuery is [Server.DecideRequest] for a caller that knows the
// original request itself (gRPC Check: attributes.request.http, whatever
// the preset): a query source reads rawQuery, the original query as sent
// (without '?').
func (s *Server) DecideWithQuery(r *http.Request, rawQuery, endpoint string) Decision {
	return s.decideRequest(r, endpoint, queryGiven, rawQuery)
}

func (s *Server) decideRequest(r *http.Request, endpoint string, from queryFrom, rawQuery string) Decision {
	if s.constraints != nil {
		return s.decideRequestBound(r, endpoint, s.requestBinding(r), from, rawQuery)
	}
	switch tok, st := s.tokenFromRequest(r, from, rawQuery); st {
	case tokenFound:
		return s.Decide(r.Context(), endpoint, tok)
	case tokenAmbiguous, tokenMalformed:
		return s.reject(r.Context(), endpoint, s.now(), "", st.err(), false)
	default:
		return s.Decide(r.Context(), endpoint, "")
	}
}

// elapsed is the time since start, a reading of the server's clock: on the
// monotonic clock when start carries it (one cheap read), else by the
// server's clock again.
func (s *Server) elapsed(start time.Time) time.Duration {
	if start != start.Round(0) { // Round(0) strips the monotonic reading
		return time.Since(start)
	}
	return s.now().Sub(start)
}

// reject builds the decision for an error of the verifier (or of the
// server: no token, an ambiguous one, a body too large), records it and
// logs it. The status is chosen by the error's family alone.
func (s *Server) reject(ctx context.Context, endpoint string, now time.Time, token string, err error, noToken bool) Decision {
	d := Decision{Status: http.StatusUnauthorized, Issuer: UnknownIssuer, NoToken: noToken, Err: err}
	var kid string
	if ve := verifyError(err); ve != nil {
		d.Class, kid = ve.Class, ve.Kid
		if is := s.byName[ve.Issuer]; is != nil {
			d.Issuer = is.name
		}
	} else {
		d.Class = verify.Class(err)
	}
	d.Status = StatusOf(err)
	level := slog.LevelInfo
	if d.Status == http.StatusServiceUnavailable {
		level = slog.LevelWarn
		if !errors.Is(err, verify.ErrUnavailable) {
			// A fault, not a verdict (StatusOf): logged as one.
			d.Class, level = "", slog.LevelError
		}
		d.Class = cmp.Or(d.Class, verify.Class(verify.ErrKeysUnavailable))
	}
	dn := s.denialOf(d)
	d.Challenge, d.Body, d.www = dn.challenge, dn.body, dn.www
	if s.metrics != nil {
		s.metrics.Decided(endpoint, d.Issuer, d.Class, s.elapsed(now))
	}
	if s.log.Enabled(ctx, level) && s.logRate.allow(ctx, s.log, level, now) {
		s.log.LogAttrs(ctx, level, "token rejected",
			slog.String("endpoint", endpoint),
			slog.String("issuer", d.Issuer),
			slog.String("kid", truncate(kid, maxLogField)),
			slog.String("class", d.Class),
			slog.String("detail", safeMessage(err, d.Class, token)),
		)
	}
	return d
}

// StatusOf is the HTTP status of err, the verifier's (or a policy's)
// answer about one token, chosen by its family alone: 200 for nil, 401 for
// a rejection (verify.ErrRejected), 403 for a valid token refused
// (verify.ErrDenied) and 503 when it could not decide
// (verify.ErrUnavailable). The verifier promises a class in one of those
// families; an error without one is a fault, not a verdict, and fails
// closed as 503. Every front end's status, and the CLI's exit status, is
// derived from it.
func StatusOf(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, verify.ErrUnavailable), verify.Class(err) == "":
		return http.StatusServiceUnavailable
	case errors.Is(err, verify.ErrRejected):
		return http.StatusUnauthorized
	case errors.Is(err, verify.ErrDenied):
		return http.StatusForbidden
	}
	return http.StatusServiceUnavailable
}

// verifyError returns the *verify.Error in err's chain, or nil. The direct
// assertion first: the verifier returns one unwrapped, and it costs no
// allocation.
func verifyError(err error) *verify.Error {
	if ve, ok := err.(*verify.Error); ok {
		return ve
	}
	var ve *verify.Error
	if errors.As(err, &ve) {
		return ve
	}
	return nil
}

// denial is a precomputed answer to a token that was not allowed.
type denial struct {
	challenge string // WWW-Authenticate value, "" for a 503
	www       []string
	body      []byte
}

// newDenial builds the denial of class with status: for a 401 the RFC 6750
// challenge (no error code when the request carried no token, §3.1), naming
// the RFC 9728 resource metadata when metadata is not "", and the JSON body.
func newDenial(class string, status int, noToken bool, metadata string) denial {
	d := denial{body: []byte(`{"valid":false,"error":"` + class + `"}` + "\n")}
	switch {
	case status != http.StatusUnauthorized:
	case noToken:
		d.challenge = `Bearer realm="jwksverify"`
	default:
		d.challenge = `Bearer error="invalid_token", error_description="` + class + `"`
	}
	if d.challenge != "" && metadata != "" {
		d.challenge += `, resource_metadata="` + metadata + `"`
	}
	if d.challenge != "" {
		d.www = []string{d.challenge}
	}
	return d
}

// denialOf returns the precomputed denial of d.
func (s *Server) denialOf(d Decision) denial {
	switch {
	case d.NoToken && d.Status == http.StatusUnauthorized:
		return s.noTokenDeny
	case d.Status == http.StatusUnauthorized:
		if dn, ok := s.rejected[d.Class]; ok {
			return dn
		}
	case d.Status == http.StatusForbidden:
		return s.forbidAny
	default:
		if dn, ok := s.unavailable[d.Class]; ok {
			return dn
		}
	}
	return newDenial(d.Class, d.Status, false, "")
}

// safeMessage returns the human message of a rejection: the verifier's error
// text (which never holds the token), bounded. As a second line of defence,
// a message that contains the token or one of its segments is replaced by the
// class word.
func safeMessage(err error, class, token string) string {
	if err == nil {
		return class
	}
	msg := err.Error()
	if leaksToken(msg, token) {
		return class
	}
	return truncate(msg, maxMessage)
}

// leaksToken reports whether msg contains token, or one of its segments long
// enough to matter.
func leaksToken(msg, token string) bool {
	if len(token) >= 8 && strings.Contains(msg, token) {
		return true
	}
	for seg := range strings.SplitSeq(token, ".") {
		if len(seg) >= 16 && strings.Contains(msg, seg) {
			return true
		}
	}
	return false
}

// truncate bounds s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
