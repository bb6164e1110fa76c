package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// This file is the fourth stage, authorization: the policy a call is
// decided by (routes, an explicit name), chosen before the token is
// verified and evaluated after its binding held.

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

// policyStage is the policy a call is decided under, chosen once, before
// the token is verified (an opaque token is introspected only at its
// issuers), and evaluated after the binding held.
type policyStage struct {
	run   bool           // the call is decided under a policy
	p     *policy.Policy // nil when none could be chosen
	name  string         // p's name ("" for none, or the any-token default)
	label string         // its metrics label
	err   error          // why none could be chosen, or the path is ambiguous
	o     request.Original
	known bool // o is the original request
	// overrides are the request as each method its overrides name would
	// run it, with its policy (nil: none, the common case).
	overrides []policy.Reading
	// anonymous: a request without a token passes, as the policy and the
	// policy of every overridden method allow.
	anonymous bool
}

// choosePolicy fills st, a zero policy stage, with the policy stage of c
// (policy.Set.Choose): the policy c names, else, when c is Routed and
// policies or a proxy preset are configured, the routes' choice; else none
// runs.
func (s *Server) choosePolicy(c *Call, st *policyStage) {
	if c.Policy == "" && (!c.Routed || !s.authorizes) {
		return
	}
	o, oerr := c.original()
	st.run, st.o, st.known = true, o, oerr == nil
	ch, err := s.policies.Choose(c.Policy, o, oerr)
	st.p, st.err = ch.Policy, err
	switch {
	case errors.Is(err, policy.ErrUnknownPolicy):
		st.p, st.label = nil, PolicyUnknown
	case ch.Policy == nil:
		st.label = PolicyUnrouted
	case ch.Policy.Name() == "":
		st.label = PolicyAnyToken
	default:
		st.label = ch.Policy.Name()
	}
	if st.p != nil {
		st.name = st.p.Name()
	}
	if err == nil {
		st.overrides = s.overridden(c.Policy, o, st.known, ch.Route)
		st.anonymous = st.p.AllowAnonymous() && overridesAnonymous(st.overrides)
	}
}

// authorizeTraced is authorize inside a "policy" span (SPEC: a span for
// each policy evaluation) when the server traces, a policy runs and the
// request's trace is sampled: the policy's name and whether it allowed,
// with the requirement that refused (never the request, its path or the
// claims). Without a tracer it costs one comparison.
func (s *Server) authorizeTraced(ctx context.Context, d *Decision, st *policyStage) {
	if s.tracer == nil || !st.run {
		s.authorize(d, st)
		return
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsSampled() {
		s.authorize(d, st) // a child would not be sampled either
		return
	}
	_, span := s.StartSpan(ctx, nil, "policy", attribute.String("jwksverify.policy", st.label))
	defer span.End()
	s.authorize(d, st)
	span.SetAttributes(attribute.Bool("jwksverify.allowed", d.Allowed()))
	if !d.Allowed() {
		span.SetAttributes(attribute.String("jwksverify.requirement", d.Requirement))
	}
}

// authorize is the fourth stage: the policy evaluated on the allowed
// decision d of a valid token whose binding held, on every request (a
// token-cache hit too), never before: a request without a valid token
// learns nothing of what a policy requires. A refusal makes d a 403 of
// class "forbidden"; a policy with its own claims_to_headers replaces the
// issuer's identity headers in d. d is changed in place: the decision is
// copied nowhere on the hot path.
func (s *Server) authorize(d *Decision, st *policyStage) {
	if !st.run {
		return
	}
	if st.err != nil {
		forbid(d, "", policy.ReqRequest, st.err)
		return
	}
	if err := st.p.Evaluate(d.Result, policy.Request{Original: st.o, Known: st.known}); err != nil {
		var dn *policy.Denial
		req := policy.ReqPolicy
		if errors.As(err, &dn) {
			req = dn.Requirement
		}
		forbid(d, st.p.Name(), req, err)
		return
	}
	if op, req, err := overridesAllow(d, st); err != nil {
		by := ""
		if op != nil {
			by = op.Name()
		}
		forbid(d, by, req, err)
		return
	}
	if h := st.p.ClaimHeaders(); h != nil {
		d.headers = s.policyHeaders[st.p.Name()]
	}
}

// overridden returns the other readings of the original request o (when
// known) that must allow it too ([policy.Set.Readings]); nil (without
// allocating) when there are none.
func (s *Server) overridden(named string, o request.Original, known bool, route int) []policy.Reading {
	if !known {
		return nil
	}
	return s.policies.Readings(named, o, route)
}

// overridesAnonymous reports whether the policy of every overridden
// method allows a request without a token, as the policy of its own method
// did: an application that runs POST /orders/1?_method=DELETE as DELETE
// must not get it anonymously because POST is anonymous.
func overridesAnonymous(overrides []policy.Reading) bool {
	for _, c := range overrides {
		if c.Err != nil || !c.Choice.Policy.AllowAnonymous() {
			return false
		}
	}
	return true
}

// overridesAllow evaluates the policy of every method that st's overrides
// name for the valid token of d: a request is allowed only when each of the
// methods an application may run it as is. It returns the refusing policy
// (nil when none could be chosen), the requirement, and why.
func overridesAllow(d *Decision, st *policyStage) (*policy.Policy, string, error) {
	for _, c := range st.overrides {
		if c.Err != nil {
			return c.Choice.Policy, policy.ReqRequest, c.Err
		}
		if err := c.Choice.Policy.Evaluate(d.Result, policy.Request{Original: c.Original, Known: true}); err != nil {
			req := policy.ReqPolicy
			var dn *policy.Denial
			if errors.As(err, &dn) {
				req = dn.Requirement
			}
			how := "method override " + c.Original.Method
			switch {
			case c.How != "":
				how = c.How
			case st.o.Method == http.MethodHead && c.Original.Method == http.MethodGet:
				how = "HEAD runs as GET"
			}
			return c.Choice.Policy, req, fmt.Errorf("%s: %w", how, err)
		}
	}
	return nil, "", nil
}

// forbid turns the allowed decision d of a valid token into a 403: the
// policy named by (whose 403 the renderer writes, and Decision.Policy
// names; "" none could be chosen: the call's policy is named) refused it
// for requirement.
func forbid(d *Decision, by, requirement string, err error) {
	d.Status, d.Class, d.Err, d.Requirement = http.StatusForbidden, verify.Class(verify.ErrForbidden), err, requirement
	d.RemoveAuthorization, d.headers, d.forbiddenBy = false, nil, by
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
		mine := map[string]string{}
		for _, h := range hs {
			if err := CheckClaimHeader(h.Header); err != nil {
				return fmt.Errorf("%w: policy %q: claim %q: %w", ErrInvalidOptions, p.Name(), h.Claim, err)
			}
			if other, dup := mine[cgiName(h.Header)]; dup {
				return fmt.Errorf("%w: policy %q: claims %q and %q map to the same header %q (or CGI twins: a CGI upstream reads both as one)", ErrInvalidOptions, p.Name(), other, h.Claim, h.Header)
			}
			mine[cgiName(h.Header)] = h.Claim
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
	// Two identity headers that are CGI twins of each other (an issuer's
	// X-Auth-Subject, a policy's X_Auth_Subject) are one header to a CGI
	// upstream.
	cgi := map[string]string{}
	for _, h := range identity {
		if other, dup := cgi[cgiName(h.header)]; dup {
			return fmt.Errorf("%w: claim headers %q and %q are CGI twins: a CGI upstream reads both as one", ErrInvalidOptions, other, h.header)
		}
		cgi[cgiName(h.header)] = h.header
	}
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
