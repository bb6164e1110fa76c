package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// This file is authorization: the policy a forward-auth request is decided
// by (routes, an explicit name), evaluated after the token verified, on
// every request (a token-cache hit too), and the 403 it answers.

// Policy labels of [PolicyMetrics] besides the configured policy names
// (which are [a-z0-9][a-z0-9-]*, so these never collide with one).
const (
	// PolicyAnyToken labels decisions of the empty default_policy: any
	// valid token of a configured issuer.
	PolicyAnyToken = "_any"
	// PolicyUnknown labels requests that named a policy that does not
	// exist (gRPC context_extensions).
	PolicyUnknown = "_unknown"
	// PolicyUnrouted labels requests whose policy could not be chosen:
	// routes need the original request and the proxy did not forward it,
	// or its path is ambiguous.
	PolicyUnrouted = "_unrouted"
	// ClassAnonymous is the class label of a request without a token that
	// an allow_anonymous policy let pass.
	ClassAnonymous = "anonymous"
)

// PolicyMetrics records authorization decisions. A [Metrics] that also
// implements it (server/metrics does) receives one call per request decided
// under a policy. It must be safe for concurrent use and not block.
type PolicyMetrics interface {
	// Authorized records one decision: the policy label (a policy name or
	// one of PolicyAnyToken, PolicyUnknown, PolicyUnrouted) and the class
	// ([ClassValid] allowed, "forbidden", [ClassAnonymous], or the class
	// of the token's rejection).
	Authorized(policy, class string)
}

// Selection says which policy decides a request, and what the original
// request is.
type Selection struct {
	// Policy names the policy explicitly (/v1/policy/<name>, gRPC
	// context_extensions). "" chooses by the routes.
	Policy string
	// Original is the original request; meaningful when OriginalErr is nil.
	Original request.Original
	// OriginalErr says why the original request is not known
	// (request.ErrMissing, request.ErrAmbiguous). An ambiguous request is
	// denied whatever the routes say; a missing request is denied when the
	// routes or the policy need it.
	OriginalErr error
}

// forbiddenBody is the body of every 403.
var forbiddenBody = []byte(`{"valid":true,"allowed":false,"error":"forbidden"}` + "\n")

// Policies returns the server's policy set (nil when none is configured).
func (s *Server) Policies() *policy.Set { return s.policies }

// Authorizes reports whether forward-auth decides by policies: policies are
// configured or a proxy preset is (an ambiguous original path is then
// denied even without policies). False means the wave-1 decision: any
// valid token.
func (s *Server) Authorizes() bool { return s.authorizes }

// AuthorizeRequest decides r as [Server.DecideRequest] does and then, for a
// valid token, the policy that sel chooses; a request with no token at all
// passes when that policy allows anonymous requests. A valid token that the
// policy refuses is a 403 decision of class "forbidden". The policy runs
// after every successful verification, a token-cache hit too, and never
// before: a request without a valid token learns nothing of what a policy
// requires.
//
// A query token source reads the query of sel.Original when it is known
// (the request itself for [Middleware]), and finds nothing otherwise.
func (s *Server) AuthorizeRequest(r *http.Request, endpoint string, sel Selection) Decision {
	var b *Binding
	if s.constraints != nil {
		b = s.requestBinding(r)
		if sel.OriginalErr == nil && sel.Original.Method != "" {
			// The request the policy is chosen by is the one the proof is for.
			o := sel.Original
			b.Request = func() (request.Original, error) { return o, nil }
		}
	}
	return s.AuthorizeRequestBound(r, endpoint, sel, b)
}

// AuthorizeRequestBound is [Server.AuthorizeRequest] for a front end that
// fills the [Binding] itself (gRPC Check; nil: none, as a bearer token): the
// sender constraints of the token's issuer are checked after it verified
// and before the policy runs, so that a policy only ever sees a token whose
// binding held. The token's scheme and the DPoP proofs are read from r.
func (s *Server) AuthorizeRequestBound(r *http.Request, endpoint string, sel Selection, b *Binding) Decision {
	from, given := queryOriginal, ""
	switch {
	case s.ownQuery:
		from = queryOwn
	case sel.OriginalErr == nil && sel.Original.Method != "":
		from, given = queryGiven, sel.Original.RawQuery
	}
	var tok string
	var st tokenState
	if b != nil {
		tok, st = s.boundToken(r, b, from, given)
	} else {
		tok, st = s.tokenFromRequest(r, from, given)
	}
	return s.authorize(r.Context(), endpoint, tok, st, sel, b)
}

// Authorize decides token (empty: no token) under the policy that sel
// chooses, as [Server.AuthorizeRequest] does.
func (s *Server) Authorize(ctx context.Context, endpoint, token string, sel Selection) Decision {
	return s.AuthorizeBound(ctx, endpoint, token, sel, nil)
}

// AuthorizeBound is [Server.Authorize] for a token presented with b (nil:
// as a bearer token), as [Server.DecideBound]: the binding is checked
// before the policy runs.
func (s *Server) AuthorizeBound(ctx context.Context, endpoint, token string, sel Selection, b *Binding) Decision {
	st := tokenFound
	if token == "" {
		st = tokenMissing
	}
	return s.authorize(ctx, endpoint, token, st, sel, b)
}

func (s *Server) authorize(ctx context.Context, endpoint, tok string, st tokenState, sel Selection, b *Binding) Decision {
	p, label, selErr := s.choose(sel)
	if st == tokenMissing && selErr == nil && p.AllowAnonymous() && s.overridesAnonymous(sel) {
		s.authorized(label, ClassAnonymous)
		return Decision{Status: http.StatusOK, Issuer: UnknownIssuer, Anonymous: true, Policy: p.Name(), headers: s.identity}
	}
	var d Decision
	switch st {
	case tokenFound:
		var among []string // an opaque token is introspected at the policy's issuers only
		if p != nil {
			among = p.Issuers()
		}
		d = s.decideAmong(ctx, endpoint, tok, among, b)
	case tokenAmbiguous, tokenMalformed:
		d = s.reject(ctx, endpoint, s.now(), "", st.err(), false)
	default:
		d = s.Decide(ctx, endpoint, "")
	}
	if p != nil {
		d.Policy = p.Name()
	}
	if !d.Allowed() {
		s.authorized(label, d.Class)
		return d
	}
	if selErr != nil {
		return s.forbid(ctx, endpoint, d, nil, label, policy.ReqRequest, selErr)
	}
	if err := p.Evaluate(d.Result, policy.Request{Original: sel.Original, Known: sel.OriginalErr == nil}); err != nil {
		var dn *policy.Denial
		req := policy.ReqPolicy
		if errors.As(err, &dn) {
			req = dn.Requirement
		}
		return s.forbid(ctx, endpoint, d, p, label, req, err)
	}
	if op, req, err := s.overridesAllow(d, sel); err != nil {
		return s.forbid(ctx, endpoint, d, op, label, req, err)
	}
	if h := p.ClaimHeaders(); h != nil {
		d.headers = s.policyHeaders[p.Name()]
	}
	s.authorized(label, ClassValid)
	return d
}

// overrideChoice is the original request as one method its overrides name
// would run it, with the policy that decides it or why none does.
type overrideChoice struct {
	o   request.Original
	p   *policy.Policy
	err error
}

// overridden returns the original request of sel as each method its
// overrides name would run it (request.Original.Overrides), with its
// policy; nil (without allocating) when there are none.
func (s *Server) overridden(sel Selection) []overrideChoice {
	if sel.OriginalErr != nil || sel.Original.Overrides == "" {
		return nil
	}
	var out []overrideChoice
	for m := range strings.FieldsSeq(sel.Original.Overrides) {
		o := sel.Original
		o.Method, o.Overrides = m, ""
		c, err := s.policies.Choose(sel.Policy, o, nil)
		out = append(out, overrideChoice{o, c.Policy, err})
	}
	return out
}

// overridesAnonymous reports whether the policy of every method that sel's
// overrides name allows a request without a token, as the policy of its own
// method did: an application that runs POST /orders/1?_method=DELETE as
// DELETE must not get it anonymously because POST is anonymous.
func (s *Server) overridesAnonymous(sel Selection) bool {
	for _, c := range s.overridden(sel) {
		if c.err != nil || !c.p.AllowAnonymous() {
			return false
		}
	}
	return true
}

// overridesAllow evaluates the policy of every method that sel's overrides
// name for the valid token of d: a request is allowed only when each of the
// methods an application may run it as is. It returns the refusing policy
// (nil when none could be chosen), the requirement, and why.
func (s *Server) overridesAllow(d Decision, sel Selection) (*policy.Policy, string, error) {
	for _, c := range s.overridden(sel) {
		if c.err != nil {
			return c.p, policy.ReqRequest, c.err
		}
		if err := c.p.Evaluate(d.Result, policy.Request{Original: c.o, Known: true}); err != nil {
			req := policy.ReqPolicy
			var dn *policy.Denial
			if errors.As(err, &dn) {
				req = dn.Requirement
			}
			return c.p, req, fmt.Errorf("method override %s: %w", c.o.Method, err)
		}
	}
	return nil, "", nil
}

// choose returns the policy of sel (policy.Set.Choose) and its metric
// label, or why none can be chosen (then p is nil when no policy was
// named).
func (s *Server) choose(sel Selection) (p *policy.Policy, label string, err error) {
	c, err := s.policies.Choose(sel.Policy, sel.Original, sel.OriginalErr)
	switch {
	case errors.Is(err, policy.ErrUnknownPolicy):
		return nil, PolicyUnknown, err
	case c.Policy == nil:
		return nil, PolicyUnrouted, err
	case c.Policy.Name() == "":
		return c.Policy, PolicyAnyToken, err
	}
	return c.Policy, c.Policy.Name(), err
}

func (s *Server) authorized(label, class string) {
	if s.policyMetrics != nil {
		s.policyMetrics.Authorized(label, class)
	}
}

// forbid turns the allowed decision d of a valid token into a 403: the
// policy p (nil when none could be chosen) refused it for requirement.
func (s *Server) forbid(ctx context.Context, endpoint string, d Decision, p *policy.Policy, label, requirement string, err error) Decision {
	d.Status, d.Class, d.Err, d.Requirement = http.StatusForbidden, verify.Class(verify.ErrForbidden), err, requirement
	d.RemoveAuthorization, d.headers = false, nil
	fd := s.forbidAny
	if p != nil {
		d.Policy = p.Name()
		if f, ok := s.forbidden[p.Name()]; ok {
			fd = f
		}
	}
	d.Challenge, d.Body, d.www = fd.challenge, fd.body, fd.www
	s.authorized(label, d.Class)
	level := slog.LevelInfo
	var dn *policy.Denial
	if errors.As(err, &dn) && dn.Err != nil {
		level = slog.LevelWarn // an expression that fails at run time is a configuration problem
	}
	now := s.now()
	if s.log.Enabled(ctx, level) && s.logRate.allow(ctx, s.log, level, now) {
		s.log.LogAttrs(ctx, level, "request forbidden",
			slog.String("endpoint", endpoint),
			slog.String("issuer", d.Issuer),
			slog.String("policy", label),
			slog.String("requirement", requirement),
			slog.String("detail", truncate(err.Error(), maxMessage)),
		)
	}
	return d
}

// newForbidden builds the 403 of a policy: RFC 6750 §3.1
// insufficient_scope, with the policy's scopes when it requires any.
func newForbidden(scopes string) denial {
	ch := `Bearer error="insufficient_scope"`
	if scopes != "" {
		ch += `, scope="` + scopes + `"`
	}
	return denial{challenge: ch, www: []string{ch}, body: forbiddenBody}
}

// setPolicies validates the policies against the issuers and precomputes
// their 403s and claim headers.
func (s *Server) setPolicies(set *policy.Set, issuers []verify.Issuer, proxy request.Proxy) error {
	s.policies = set
	s.authorizes = set != nil || proxy != request.None
	if set.HasRoutes() && proxy == request.None {
		return fmt.Errorf("%w: routes need the original request: set Proxy (forward_auth.proxy)", ErrInvalidOptions)
	}
	s.forbidAny = newForbidden("")
	s.forbidden = map[string]denial{}
	s.policyHeaders = map[string][]claimHeader{}
	seen := map[string]bool{}
	var identity []claimHeader
	for _, is := range s.issuers {
		for _, h := range is.headers {
			if !seen[h.header] {
				seen[h.header] = true
				identity = append(identity, h)
			}
		}
	}
	for _, p := range set.Policies() {
		s.forbidden[p.Name()] = newForbidden(p.Scopes())
		hs := p.ClaimHeaders()
		if hs == nil {
			continue
		}
		var out []claimHeader
		for _, h := range hs {
			if err := CheckClaimHeader(h.Header); err != nil {
				return fmt.Errorf("%w: policy %q: claim %q: %w", ErrInvalidOptions, p.Name(), h.Claim, err)
			}
			for _, vi := range issuers {
				if (len(p.Issuers()) == 0 || slices.Contains(p.Issuers(), vi.Issuer)) && !slices.Contains(vi.ExtractClaims, h.Claim) {
					return fmt.Errorf("%w: policy %q: claim %q is not extracted by the verifier for issuer %q (ExtractClaims)", ErrInvalidOptions, p.Name(), h.Claim, vi.Issuer)
				}
			}
			out = append(out, claimHeader{claim: h.Claim, header: h.Header})
			if !seen[h.Header] {
				seen[h.Header] = true
				identity = append(identity, claimHeader{claim: h.Claim, header: h.Header})
			}
		}
		s.policyHeaders[p.Name()] = out
	}
	slices.SortFunc(identity, func(a, b claimHeader) int { return strings.Compare(a.header, b.header) })
	s.identity = identity
	// An allowed answer sets its own claim headers and every other identity
	// header empty: a client's copy of another issuer's header, or of the
	// issuer's under a policy with its own claims_to_headers, is then
	// overwritten or removed too, never passed upstream as if set by us.
	for _, is := range s.issuers {
		is.answer = withIdentity(is.headers, identity)
	}
	for name, hs := range s.policyHeaders {
		s.policyHeaders[name] = withIdentity(hs, identity)
	}
	return nil
}

// withIdentity returns hs followed by each identity header that hs does not
// name, with no claim (always sent empty).
func withIdentity(hs, identity []claimHeader) []claimHeader {
	out := slices.Clip(slices.Clone(hs))
	for _, h := range identity {
		if !slices.ContainsFunc(hs, func(o claimHeader) bool { return o.header == h.header }) {
			out = append(out, claimHeader{header: h.header})
		}
	}
	return out
}

// policyPrefix is the path of explicitly named policies: /v1/policy/<name>
// and below it.
const policyPrefix = "/v1/policy/"

// servePolicy is forward-auth under a named policy: /v1/policy/<name> and
// /v1/policy/<name>/*, any method. An unknown name is 404.
func (s *Server) servePolicy(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), policyPrefix)
	name, _, _ := strings.Cut(rest, "/")
	if _, ok := s.policies.Lookup(name); !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such policy")
		return
	}
	o, err := s.proxy.From(r, policyPrefix+name)
	s.writeForwardAuth(w, s.AuthorizeRequest(r, EndpointAuthz, Selection{Policy: name, Original: o, OriginalErr: err}))
}
