// Package policy decides whether a verified token may make a request:
// authorization policies (scopes, claim matchers, a CEL expression, the
// issuers that may satisfy them, anonymous access) and the routes that
// choose a policy for an original request (method, host, path).
//
// A [Set] is compiled once from [Options] by [New] — every CEL expression
// is compiled and type-checked there, so a bad one is a configuration
// error — and is then immutable and safe for concurrent use. A [Policy] is
// evaluated only on a token the verifier accepted ([verify.Result]), on
// every request, whether the verdict came from the token cache or not.
// Route matching reads a [request.Original], whose path package request
// has already normalized. [Set.Choose] is how every front end (the
// server's endpoints, gRPC, the CLI) picks the policy of a request, and
// [Policy.Explain] is [Policy.Evaluate] with each requirement's outcome.
//
// A refusal is a [*Denial]: it matches verify.ErrForbidden (and its family
// verify.ErrDenied) with errors.Is, names the policy and the requirement
// that failed, and, for an expression that failed at run time, carries the
// error to log.
package policy

import (
	"errors"
	"fmt"
	"iter"
	"net/textproto"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// DefaultCostLimit bounds the run-time cost of one CEL evaluation when
// [Options.CostLimit] is zero (cel-go's cost units: about one per
// operation, one per element a comprehension visits).
const DefaultCostLimit = 10000

// Requirements a [Denial] names.
const (
	ReqIssuers    = "issuers"    // the token's configured issuer is not in the policy's issuers
	ReqScopes     = "scopes"     // scopes.all or scopes.any does not hold
	ReqClaims     = "claims"     // a claim matcher does not hold (Denial.Index says which)
	ReqExpression = "expression" // the expression is false, or failed at run time (Denial.Err)
	ReqRequest    = "request"    // the original request is needed and unknown, or its path is ambiguous
	ReqPolicy     = "policy"     // a named policy that does not exist
)

// Spec is one configured policy (the policies list of the configuration).
type Spec struct {
	// Name is [a-z0-9][a-z0-9-]*, unique; routes and /v1/policy/<name>
	// refer to it. Required.
	Name string
	// Issuers are the configured issuers (verify.Issuer.Issuer) whose
	// tokens may satisfy the policy. Empty means any configured issuer.
	Issuers []string
	// Scopes are required of the union of the token's scope and scp
	// claims (each a space-separated string or an array of strings). The
	// zero value requires none.
	Scopes Scopes
	// Claims must each hold.
	Claims []Claim
	// Expression is an optional CEL expression of type bool over claims,
	// header, issuer and request ({method, host, path}). Empty means none.
	Expression string
	// AllowAnonymous lets a request that carries no token at all pass, with
	// every identity header empty. A request with a token is judged as
	// usual: an invalid token is still refused.
	AllowAnonymous bool
	// ClaimsToHeaders maps a claim to the forward-auth response header that
	// carries its value when this policy allows a request, instead of the
	// issuer's claims_to_headers. Nil means the issuer's.
	ClaimsToHeaders map[string]string
}

// Scopes are a policy's scope requirements.
type Scopes struct {
	// All must each be granted. Empty: no such requirement.
	All []string
	// Any: at least one must be granted. Empty: no such requirement.
	Any []string
}

// Claim is one claim matcher: exactly one of AnyOf and Equals is set. The
// values are JSON scalars (string, number, bool) as Go values: string,
// bool, any integer or float type, or json.Number. A claim that is an
// array holds when one of its elements equals; a scalar claim when it
// equals. Values compare by JSON type and value (numbers numerically, 3
// equals 3.0; "true" is not true). A missing claim fails its matcher.
type Claim struct {
	// Claim is the top-level claim name. Required.
	Claim string
	// AnyOf: the claim (or one of its elements) equals one of these.
	AnyOf []any
	// Equals: the claim (or one of its elements) equals this.
	Equals any
}

// Route chooses a policy for the requests it matches.
type Route struct {
	// Methods are HTTP methods (upper case, compared exactly). Empty means
	// any method.
	Methods []string
	// Host is compared case-insensitively, without port. Empty means any.
	// An IP address must be in its canonical spelling
	// ([request.CheckIPSpelling]): "127.0.0.1", "::1" or "[::1]", not
	// "127.1" or "0:0::1".
	Host string
	// Path is an exact path, or ends in "/**" to match itself and every
	// path below it at a segment boundary; a segment "*" matches exactly
	// one non-empty segment. Empty means any path ("/**").
	Path string
	// Policy names the policy (a Spec.Name). Required.
	Policy string
}

// Options configure [New].
type Options struct {
	// Policies are the named policies.
	Policies []Spec
	// Routes are tried in order; the first that matches chooses the policy.
	Routes []Route
	// DefaultPolicy is the policy of a request no route matches. Empty
	// means a valid token of any configured issuer is enough.
	DefaultPolicy string
	// Issuers are the configured issuer names; a policy's Issuers must be
	// among them. Empty means they are not checked (a library user who
	// builds a Set before the verifier).
	Issuers []string
	// CostLimit bounds each expression evaluation; one that runs out is a
	// run-time error (denied). Zero means [DefaultCostLimit].
	CostLimit uint64
	// Compiler compiles Spec.Expression (package policy/celexpr: CEL).
	// Nil means expressions are refused.
	Compiler Compiler
}

// Compiler compiles a policy's expression. package policy/celexpr
// implements it with cel-go.
type Compiler interface {
	// Compile compiles src, which must be of type bool; each evaluation of
	// the result is bounded by costLimit. The error says why src is
	// refused.
	Compile(src string, costLimit uint64) (Expression, error)
}

// Expression is a compiled expression. Implementations must be safe for
// concurrent use.
type Expression interface {
	// Eval evaluates the expression for a verified token and the original
	// request. An error (a run-time error, the cost limit) denies.
	Eval(res *verify.Result, o request.Original) (bool, error)
	// ReadsRequest reports whether the expression reads the original
	// request: then it is not evaluated, and denies, without one.
	ReadsRequest() bool
}

// ClaimReader is an [Expression] that names the claims it reads by name.
// [Set.ClaimNames] includes them, so that the verifier indexes them and an
// evaluation on a token-cache hit reads them without a scan. Naming a claim
// is only a speed-up: an expression may read any claim.
type ClaimReader interface {
	// Claims returns the claim names. The slice is the caller's.
	Claims() []string
}

// Set is a compiled set of policies and routes. It is immutable and safe
// for concurrent use.
type Set struct {
	byName   map[string]*Policy
	list     []*Policy // configured order
	routes   []route
	fallback *Policy // default_policy, or anyToken
	// spelled: some route's path names a byte that is not unreserved, so
	// Choose also matches the decoded reading ([Set.selectDecoded]).
	spelled bool
	// tailStar: some route is exact with a last "*" segment
	// ([route.tailStar]); AlsoUnder then looks below it.
	tailStar bool
}

// anyToken is the policy of "a valid token of any configured issuer is
// enough": the empty default_policy.
var anyToken = &Policy{}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// New validates and compiles opts. Every error matches [ErrInvalid] and
// names the field, as the configuration file spells it
// ("policies[1].expression: ...", "routes[0].policy: ...").
func New(opts Options) (*Set, error) {
	limit := opts.CostLimit
	if limit == 0 {
		limit = DefaultCostLimit
	}
	s := &Set{byName: make(map[string]*Policy, len(opts.Policies))}
	for i, sp := range opts.Policies {
		p, err := compile(sp, opts.Issuers, opts.Compiler, limit)
		if err != nil {
			return nil, fmt.Errorf("%w: policies[%d]%s", ErrInvalid, i, err)
		}
		if _, dup := s.byName[p.name]; dup {
			return nil, fmt.Errorf("%w: policies[%d].name: %q is defined twice", ErrInvalid, i, p.name)
		}
		s.byName[p.name] = p
		s.list = append(s.list, p)
	}
	for i, rt := range opts.Routes {
		r, err := compileRoute(rt, s.byName)
		if err != nil {
			return nil, fmt.Errorf("%w: routes[%d].%s", ErrInvalid, i, err)
		}
		s.routes = append(s.routes, r)
		s.spelled = s.spelled || r.dsegs != nil
		s.tailStar = s.tailStar || r.tailStar
	}
	s.fallback = anyToken
	if opts.DefaultPolicy != "" {
		p, ok := s.byName[opts.DefaultPolicy]
		if !ok {
			return nil, fmt.Errorf("%w: default_policy: %q is not a configured policy", ErrInvalid, opts.DefaultPolicy)
		}
		s.fallback = p
	}
	return s, nil
}

// compile checks and compiles one policy; errors start with the field
// (".scopes.all[0]: ...") or with ": " for the whole policy.
func compile(sp Spec, issuers []string, cc Compiler, limit uint64) (*Policy, error) {
	if !namePattern.MatchString(sp.Name) {
		return nil, fmt.Errorf(".name: %q is not [a-z0-9][a-z0-9-]*", sp.Name)
	}
	p := &Policy{name: sp.Name, anonymous: sp.AllowAnonymous, issuers: slices.Clone(sp.Issuers)}
	for i, is := range sp.Issuers {
		if is == "" || (len(issuers) > 0 && !slices.Contains(issuers, is)) {
			return nil, fmt.Errorf(" (%s).issuers[%d]: %q is not a configured issuer", sp.Name, i, is)
		}
	}
	for _, list := range []struct {
		field string
		in    []string
		out   *[]string
	}{{"scopes.all", sp.Scopes.All, &p.all}, {"scopes.any", sp.Scopes.Any, &p.any}} {
		for i, sc := range list.in {
			if !validScope(sc) {
				return nil, fmt.Errorf(" (%s).%s[%d]: %q is not a scope token (RFC 6749 §3.3: printable ASCII without space, '\"' or '\\')", sp.Name, list.field, i, sc)
			}
		}
		*list.out = slices.Clone(list.in)
	}
	if len(p.all)+len(p.any) > 0 {
		p.scopeList = strings.Join(slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(p.all), p.any...)))), " ")
	}
	for i, c := range sp.Claims {
		m, err := compileClaim(c)
		if err != nil {
			return nil, fmt.Errorf(" (%s).claims[%d]%s", sp.Name, i, err)
		}
		p.claims = append(p.claims, m)
	}
	if len(p.all)+len(p.any) > 0 {
		p.names = append(p.names, "scope", "scp")
	}
	for i := range p.claims {
		if j := slices.Index(p.names, p.claims[i].claim); j >= 0 {
			p.claims[i].slot = j
			continue
		}
		p.claims[i].slot = len(p.names)
		p.names = append(p.names, p.claims[i].claim)
	}
	if sp.Expression != "" {
		if cc == nil {
			return nil, fmt.Errorf(" (%s).expression: no expression compiler (Options.Compiler)", sp.Name)
		}
		e, err := cc.Compile(sp.Expression, limit)
		if err != nil {
			return nil, fmt.Errorf(" (%s).expression: %w", sp.Name, err)
		}
		p.expr, p.needsRequest = e, e.ReadsRequest()
		if cr, ok := e.(ClaimReader); ok {
			p.exprClaims = cr.Claims()
		}
	}
	if sp.ClaimsToHeaders != nil {
		p.headers = make([]ClaimHeader, 0, len(sp.ClaimsToHeaders))
		for claim, h := range sp.ClaimsToHeaders {
			if claim == "" || h == "" {
				return nil, fmt.Errorf(" (%s).claims_to_headers: empty claim or header name", sp.Name)
			}
			p.headers = append(p.headers, ClaimHeader{Claim: claim, Header: textproto.CanonicalMIMEHeaderKey(h)})
		}
		slices.SortFunc(p.headers, func(a, b ClaimHeader) int { return strings.Compare(a.Claim, b.Claim) })
	}
	return p, nil
}

// validScope reports whether s is a scope-token (RFC 6749 §3.3: 1*NQCHAR,
// %x21 / %x23-5B / %x5D-7E).
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Lookup returns the policy named name. The methods of Set accept a nil
// *Set: no policies, no routes, the any-token default.
func (s *Set) Lookup(name string) (*Policy, bool) {
	if s == nil {
		return nil, false
	}
	p, ok := s.byName[name]
	return p, ok
}

// ClaimNames returns every claim a policy's scopes and matchers read
// ("scope", "scp", the matchers' claims) and every claim an expression
// names ([ClaimReader]), sorted: pass it as
// verify.Options.IndexClaims, so that evaluating a policy on a token-cache
// hit scans no claims. The slice is the caller's.
func (s *Set) ClaimNames() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, p := range s.list {
		out = append(out, p.names...)
		out = append(out, p.exprClaims...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Policies returns the configured policies in order. The slice is the
// caller's; the policies are shared and immutable.
func (s *Set) Policies() []*Policy {
	if s == nil {
		return nil
	}
	return slices.Clone(s.list)
}

// HasRoutes reports whether routes are configured: then choosing a policy
// needs the original request.
func (s *Set) HasRoutes() bool { return s != nil && len(s.routes) > 0 }

// Default returns the policy of a request no route matches: default_policy,
// or the policy that any valid token satisfies (its Name is "").
func (s *Set) Default() *Policy {
	if s == nil {
		return anyToken
	}
	return s.fallback
}

// Select returns the policy of the first route that matches o, or
// [Set.Default]. With no routes it returns the default without looking at
// o. A nil s selects the any-token policy.
func (s *Set) Select(o request.Original) *Policy {
	p, _ := s.selectRoute(o)
	return p
}

// selectRoute is [Set.Select] that also returns the index of the route
// that matched, or -1.
func (s *Set) selectRoute(o request.Original) (*Policy, int) {
	if s == nil {
		return anyToken, -1
	}
	for i := range s.routes {
		if s.routes[i].match(o) {
			return s.routes[i].policy, i
		}
	}
	return s.fallback, -1
}

// selectDecoded is the index of the first route that matches o with its
// path and the routes' patterns percent-decoded (as Werkzeug and
// find-my-way route), or -1 (-2 when the path does not decode).
func (s *Set) selectDecoded(o request.Original) int {
	decoded, err := url.PathUnescape(o.Path)
	if err != nil {
		return -2
	}
	for i := range s.routes {
		if s.routes[i].matchDecoded(o, decoded) {
			return i
		}
	}
	return -1
}

// sentPolicy is the policy of the first route that matches o with its
// path as sent (o.SentPath), or the default.
func (s *Set) sentPolicy(o request.Original) *Policy {
	o.Path = o.SentPath
	p, _ := s.selectRoute(o)
	return p
}

// decodedPolicy is the policy of route index i of selectDecoded: the
// fallback for -1, nil (never a chosen policy) for -2. Only the policy
// can differ between the two readings, so an encoded ':' that reaches
// another route of the same policy is not refused.
func (s *Set) decodedPolicy(i int) *Policy {
	switch {
	case i >= 0:
		return s.routes[i].policy
	case i == -1:
		return s.fallback
	}
	return nil
}

// AlsoAs returns the methods, besides o.Method, an application may run
// the request o as, each of which must be allowed too (the server and the
// CLI decide each under the policy [Set.Choose] gives it): those its
// overrides name (request.Original.Overrides), and GET for a HEAD, since
// Express, Flask, Rails and Go's ServeMux run a HEAD with the GET handler —
// unless route, the index of the route chosen for o (-1: none), names HEAD
// in its methods: an operator who routes HEAD on its own meant it (an
// application that registers a HEAD handler runs that one). Nil, without
// allocating, when there are none.
func (s *Set) AlsoAs(o request.Original, route int) []string {
	head := o.Method == "HEAD"
	if o.Overrides == "" && !head {
		return nil
	}
	out := strings.Fields(o.Overrides)
	if head && !slices.Contains(out, "GET") && !s.routeNames(route, "HEAD") {
		out = append(out, "GET")
	}
	return out
}

// AlsoUnder yields each policy, and its route's index, that must allow the
// request o too, which route (the index [Set.Choose] gave it; -1: none
// matched, the default decides) does not: those of every route ending in
// "*" whose "*" matches the rest of o's path (/items/* for /items/1/x, and
// /items/*/attachments/* for /items/1/attachments/2/x too), when no route
// or a subtree route (/api/**) chose o, whose policy is not the chosen
// one. Echo v4 hands a route's last :param the rest of the path, '/'
// included (/items/:id runs /items/1/x with id "1/x"), and prefers a
// :param to a catch-all, so an application may run such a request with
// the handler a route guards — the deepest one, which need not be the
// first in the configuration; other routers run another handler, or none.
// Deciding it under all keeps the strictest. A route that chose o and
// goes on at or past a route's "*" along that route's own segments
// (/items/*/detail, /items/*/files/** for /items/*), or leaves them at a
// literal where it has its "*" (/items/new/**), is the application's own
// handler for it: nothing then (from that route). One that has a "*"
// where the route has a literal (/*/*/meta beside /items/*) is not: Echo
// tries the static branch first, and its leaf :param takes the rest.
// Only for a policy the routes chose: a policy chosen by name decides
// alone.
func (s *Set) AlsoUnder(o request.Original, route int) iter.Seq2[*Policy, int] {
	return func(yield func(*Policy, int) bool) {
		if s == nil || !s.tailStar || route >= len(s.routes) {
			return
		}
		chosen := s.fallback
		if route >= 0 {
			chosen = s.routes[route].policy
		}
		for i := range s.routes {
			r := &s.routes[i]
			if route >= 0 {
				// The route that chose o goes on at or past r's '*' in
				// r's own branch (/users/*/avatar/** or /users/*/detail
				// below /users/*): Echo's :param has a child then and
				// takes one segment, unless o ends at r's '*'; or it
				// leaves r's segments at a literal where r has its '*'
				// (/users/me: a static node wins). Its handler runs o.
				if shadow, literal := s.routes[route].shadows(r); shadow && (literal || !r.match(o)) {
					continue
				}
			}
			if r.tailStar && r.policy != chosen && r.matchTail(o) {
				if !yield(r.policy, i) {
					return
				}
			}
		}
	}
}

// WithoutFormat returns the policy, and its route's index, that must allow
// the request o too when its path ends in a format suffix: the route that
// matches o's path without the ".ext" its last segment ends with
// (/admin.json as /admin; ext holds no '.', nothing follows it), when a
// route matches that path and its policy is not the one chosen for o
// (route: the index [Set.Choose] gave it; -1: the default decides). Rails
// gives every route an optional (.:format), so it runs /admin.json with
// the /admin action; a path no route matches without its suffix, or one
// whose route has the chosen policy, is nothing here. Rails ignores a
// trailing slash, so /admin.json/ is /admin too. Only for a policy the
// routes chose: a policy chosen by name decides alone.
func (s *Set) WithoutFormat(o request.Original, route int) (*Policy, int, bool) {
	if s == nil || len(s.routes) == 0 || route >= len(s.routes) {
		return nil, -1, false
	}
	path := strings.TrimSuffix(o.Path, "/")
	slash := strings.LastIndexByte(path, '/')
	last := path[slash+1:]
	dot := strings.LastIndexByte(last, '.')
	if dot <= 0 || dot == len(last)-1 {
		return nil, -1, false
	}
	chosen := s.fallback
	if route >= 0 {
		chosen = s.routes[route].policy
	}
	o.Path, o.SentPath = path[:slash+1+dot], ""
	p, i := s.selectRoute(o)
	if i < 0 || p == chosen {
		return nil, -1, false
	}
	return p, i, true
}

// Reading is the original request as an application may also run it
// ([Set.Readings]): as another method, or under another route, with the
// policy chosen for it (Choice) or why none could be (Err).
type Reading struct {
	Original request.Original
	Choice   Choice
	Err      error
	// How says why the request is read so, for a refusal's detail; ""
	// for another method (the method says it).
	How string
}

// Readings returns every other reading of o that must allow it too, o
// having been chosen a policy under name and route ([Set.Choose]'s
// Choice.Route): each method an application may run it as ([Set.AlsoAs]:
// those its overrides name, GET for a HEAD; and GET for an override
// naming HEAD, as for a HEAD, unless the route chosen for that HEAD names
// HEAD), each with the policy name or else the routes choose for it; and,
// for o and each of those when no name chose the policy, the routes that
// also take it ([Set.AlsoUnder], [Set.WithoutFormat]). The one list the
// server decides by and the CLI explains. Nil (without allocating) when
// there are none.
func (s *Set) Readings(name string, o request.Original, route int) []Reading {
	var out []Reading
	tail := func(o request.Original, route int) {
		if name != "" {
			return
		}
		for p, i := range s.AlsoUnder(o, route) {
			out = append(out, Reading{Original: o, Choice: Choice{Policy: p, By: ByRoute, Route: i},
				How: "the last segment of " + s.RouteString(i) + " taking the rest of the path"})
		}
		if p, i, ok := s.WithoutFormat(o, route); ok {
			out = append(out, Reading{Original: o, Choice: Choice{Policy: p, By: ByRoute, Route: i},
				How: "the path without its format suffix, " + s.RouteString(i)})
		}
	}
	tail(o, route)
	methods := s.AlsoAs(o, route)
	own := len(methods) // those o names itself (and GET for its HEAD)
	for i := 0; i < len(methods); i++ {
		om := o
		om.Method, om.Overrides = methods[i], ""
		how := ""
		if i >= own {
			how = "method override HEAD runs as GET"
		}
		c, err := s.Choose(name, om, nil)
		out = append(out, Reading{Original: om, Choice: c, Err: err, How: how})
		if err != nil {
			continue
		}
		tail(om, c.Route)
		// An override naming HEAD runs the request as HEAD, which the
		// application runs with the GET handler, as it does a HEAD: GET
		// is decided too, unless the route chosen for that HEAD names
		// HEAD (AlsoAs, as for a HEAD itself).
		for _, g := range s.AlsoAs(om, c.Route) {
			if g != o.Method && !slices.Contains(methods, g) {
				methods = append(methods, g)
			}
		}
	}
	return out
}

// routeNames reports whether route i lists method in its methods.
func (s *Set) routeNames(i int, method string) bool {
	return s != nil && i >= 0 && i < len(s.routes) && slices.Contains(s.routes[i].methods, method)
}

// How [Set.Choose] chose a policy ([Choice.By]).
const (
	ByName    = "name"    // named explicitly (/v1/policy/<name>, gRPC context_extensions, /v1/verify, the CLI's --policy)
	ByRoute   = "route"   // the first route that matched the original request
	ByDefault = "default" // no route matched (or none is configured): default_policy, or any valid token
)

// Choice is the policy that [Set.Choose] chose, and how.
type Choice struct {
	// Policy is the policy; nil when none could be chosen.
	Policy *Policy
	// By is ByName, ByRoute or ByDefault.
	By string
	// Route is the index of the route that matched (By is ByRoute), else -1.
	Route int
}

// Choose returns the policy that decides a request: the policy named name,
// or, when name is "", the one the routes choose for the original request
// o. oerr says why o is not known (request.ErrMissing,
// request.ErrAmbiguous; nil: it is). An ambiguous request is refused
// whatever chose the policy ([ErrAmbiguous], with the named policy in
// the Choice); a missing request is refused when routes must choose
// ([ErrUnrouted]); a name that is not configured is [ErrUnknownPolicy].
// The server and the CLI both choose by it.
func (s *Set) Choose(name string, o request.Original, oerr error) (Choice, error) {
	if name != "" {
		p, ok := s.Lookup(name)
		if !ok {
			return Choice{By: ByName, Route: -1}, ErrUnknownPolicy
		}
		if errors.Is(oerr, request.ErrAmbiguous) {
			return Choice{Policy: p, By: ByName, Route: -1}, ErrAmbiguous
		}
		return Choice{Policy: p, By: ByName, Route: -1}, nil
	}
	switch {
	case errors.Is(oerr, request.ErrAmbiguous):
		return Choice{By: ByRoute, Route: -1}, ErrAmbiguous
	case s.HasRoutes() && oerr != nil:
		return Choice{By: ByRoute, Route: -1}, ErrUnrouted
	}
	p, i := s.selectRoute(o)
	if s != nil && s.spelled && s.decodedPolicy(s.selectDecoded(o)) != p {
		// The route a router that decodes the path first runs it under is
		// another one: ambiguous, refused rather than decoded.
		return Choice{By: ByRoute, Route: -1}, ErrAmbiguous
	}
	if s.HasRoutes() && o.SentPath != "" && s.sentPolicy(o) != p {
		// The route a router that matches the target as sent (Express,
		// chi) runs it under is another one: /%70ublic/x is not its
		// /public/x.
		return Choice{By: ByRoute, Route: -1}, ErrAmbiguous
	}
	if i < 0 {
		return Choice{Policy: p, By: ByDefault, Route: -1}, nil
	}
	return Choice{Policy: p, By: ByRoute, Route: i}, nil
}

// RouteString describes routes[i] as configured ("routes[2]: GET,HEAD
// api.example.com /orders/**"; "any" for an empty field), or "" when there
// is no such route.
func (s *Set) RouteString(i int) string {
	if s == nil || i < 0 || i >= len(s.routes) {
		return ""
	}
	r := &s.routes[i]
	methods, host := "any-method", "any-host"
	if r.methods != nil {
		methods = strings.Join(r.methods, ",")
	}
	if r.host != "" {
		host = r.host
	}
	path := r.pattern
	return "routes[" + itoa(i) + "]: " + methods + " " + host + " " + path
}

// ClaimHeader maps a claim to a forward-auth response header (canonical).
type ClaimHeader struct {
	Claim, Header string
}

// Policy is one compiled policy. It is immutable and safe for concurrent
// use.
type Policy struct {
	name         string
	issuers      []string
	all, any     []string
	scopeList    string // every required scope, sorted, space-separated
	claims       []claimMatcher
	names        []string   // the claims scopes and matchers read: "scope", "scp" first when scopes are required
	expr         Expression // nil: none
	exprClaims   []string   // the claims expr names (ClaimReader)
	needsRequest bool
	anonymous    bool
	headers      []ClaimHeader // nil: the issuer's
}

// Name is the policy's name; "" for the policy that any valid token
// satisfies.
func (p *Policy) Name() string { return p.name }

// Issuers returns the configured issuers whose tokens may satisfy the
// policy; empty means any. Introspection of opaque tokens uses it to choose
// the authorization server. The slice is the caller's.
func (p *Policy) Issuers() []string { return slices.Clone(p.issuers) }

// AllowAnonymous reports whether a request without any token passes.
func (p *Policy) AllowAnonymous() bool { return p.anonymous }

// Scopes returns the scopes the policy requires (scopes.all and
// scopes.any), sorted, space-separated: the scope="..." of an
// insufficient_scope challenge. "" when it requires none.
func (p *Policy) Scopes() string { return p.scopeList }

// NeedsRequest reports whether evaluating the policy reads the original
// request (its expression names request).
func (p *Policy) NeedsRequest() bool { return p.needsRequest }

// ClaimHeaders returns the policy's claims_to_headers sorted by claim, or
// nil when the policy uses the issuer's. The slice is shared: do not
// modify it.
func (p *Policy) ClaimHeaders() []ClaimHeader { return p.headers }

// Denial is a policy's refusal of a valid token. It matches
// verify.ErrForbidden and verify.ErrDenied with errors.Is.
type Denial struct {
	// Policy is the name of the policy that refused.
	Policy string
	// Requirement is the requirement that failed (ReqScopes, …).
	Requirement string
	// Index is the claim matcher's index for ReqClaims, else -1.
	Index int
	// Detail says what failed, for logs and the CLI's --explain; never
	// the token or a claim value.
	Detail string
	// Err is the run-time error of an expression, or nil.
	Err error
}

// Error describes the refusal.
func (d *Denial) Error() string {
	s := "forbidden: policy " + d.Policy + ": " + d.Detail
	if d.Err != nil {
		s += ": " + d.Err.Error()
	}
	return s
}

// Unwrap makes errors.Is match verify.ErrForbidden (and the run-time
// error, when there is one).
func (d *Denial) Unwrap() []error {
	if d.Err != nil {
		return []error{verify.ErrForbidden, d.Err}
	}
	return []error{verify.ErrForbidden}
}

// Request is the original request a policy is evaluated for.
type Request struct {
	// Original is the request; meaningful only when Known.
	Original request.Original
	// Known reports whether the original request is known. A policy whose
	// expression reads the request refuses when it is not.
	Known bool
}

// Evaluate decides whether the verified token res may make req. It returns
// nil when the policy allows it, else a *Denial. The requirements are
// checked in order: issuers, scopes, claims, expression. It does not
// allocate on the way to an allow without an expression. res must be a
// token the verifier accepted.
func (p *Policy) Evaluate(res *verify.Result, req Request) error {
	return p.evaluate(res, req, nil)
}

// Explain decides as [Policy.Evaluate] does — the same checks, the same
// answer — and returns each requirement the policy has, in the order they
// are checked, up to the first that failed: Check is the requirement
// (ReqIssuers, ReqScopes, ReqClaims once per matcher, ReqRequest,
// ReqExpression), Detail says what held or failed (never a claim value).
// A policy without requirements returns no step.
func (p *Policy) Explain(res *verify.Result, req Request) ([]verify.Step, error) {
	var steps []verify.Step
	err := p.evaluate(res, req, &steps)
	return steps, err
}

// evaluate is Evaluate, recording each check in *trace when trace is not
// nil (Explain); the decision does not depend on trace.
func (p *Policy) evaluate(res *verify.Result, req Request, trace *[]verify.Step) error {
	if len(p.issuers) > 0 {
		if !slices.Contains(p.issuers, res.ConfiguredIssuer) {
			return p.deny(trace, ReqIssuers, -1, "the token's issuer is not one of the policy's issuers", nil)
		}
		p.pass(trace, ReqIssuers, "the token's issuer is one of the policy's issuers")
	}
	if len(p.names) > 0 {
		// One pass over the claims finds every claim the policy reads.
		var buf [8]string
		var vals []string
		if len(p.names) <= len(buf) {
			vals = buf[:len(p.names)]
		} else {
			vals = make([]string, len(p.names))
		}
		res.ClaimValues(p.names, vals)
		if len(p.all)+len(p.any) > 0 {
			if msg := p.checkScopes(vals[0], vals[1]); msg != "" {
				return p.deny(trace, ReqScopes, -1, msg, nil)
			}
			if trace != nil {
				p.pass(trace, ReqScopes, p.scopesHeld())
			}
		}
		for i := range p.claims {
			if !p.claims[i].holds(vals[p.claims[i].slot]) {
				return p.deny(trace, ReqClaims, i, "claims["+itoa(i)+"] ("+p.claims[i].claim+") does not hold", nil)
			}
			if trace != nil {
				p.pass(trace, ReqClaims, "claims["+itoa(i)+"] ("+p.claims[i].claim+") holds")
			}
		}
	}
	if p.expr != nil {
		if p.needsRequest && !req.Known {
			return p.deny(trace, ReqRequest, -1, "the expression reads the original request, which the proxy did not forward", nil)
		}
		if p.needsRequest && req.Original.DecodedEscape() {
			// request.path is the decoded spelling; a router that matches
			// the target as sent (Express, chi) acts on the other one. Hex
			// digits in another case alone (%c3%a9) are no other path to
			// an expression: it is not refused for them.
			return p.deny(trace, ReqRequest, -1, "the expression reads the original request, whose path has two spellings (an unreserved escape)", nil)
		}
		ok, err := p.expr.Eval(res, req.Original)
		switch {
		case err != nil:
			return p.deny(trace, ReqExpression, -1, "the expression failed at run time", err)
		case !ok:
			return p.deny(trace, ReqExpression, -1, "the expression is false", nil)
		}
		p.pass(trace, ReqExpression, "the expression is true")
	}
	return nil
}

// scopesHeld describes the scope requirements that held.
func (p *Policy) scopesHeld() string {
	var parts []string
	if len(p.all) > 0 {
		parts = append(parts, "all of "+strings.Join(p.all, " "))
	}
	if len(p.any) > 0 {
		parts = append(parts, "one of "+strings.Join(p.any, " "))
	}
	return "granted: " + strings.Join(parts, "; ")
}

// pass records a requirement that held, when tracing.
func (p *Policy) pass(trace *[]verify.Step, req, detail string) {
	if trace != nil {
		*trace = append(*trace, verify.Step{Check: req, OK: true, Detail: detail})
	}
}

// deny returns the refusal, and records it when tracing.
func (p *Policy) deny(trace *[]verify.Step, req string, index int, detail string, err error) *Denial {
	d := &Denial{Policy: p.name, Requirement: req, Index: index, Detail: detail, Err: err}
	if trace != nil {
		msg := detail
		if err != nil {
			msg += ": " + err.Error()
		}
		*trace = append(*trace, verify.Step{Check: req, OK: false, Detail: msg})
	}
	return d
}

// checkScopes returns why the token's scopes (the JSON values of its scope
// and scp claims, "" when absent) do not satisfy p, or "".
func (p *Policy) checkScopes(scope, scp string) string {
	for _, want := range p.all {
		if !hasScope(scope, scp, want) {
			return "scope " + want + " is not granted"
		}
	}
	if len(p.any) == 0 {
		return ""
	}
	for _, want := range p.any {
		if hasScope(scope, scp, want) {
			return ""
		}
	}
	return "none of the scopes " + strings.Join(p.any, ", ") + " is granted"
}

// hasScope reports whether the union of the scope and scp claims (each a
// space-separated string or an array of strings) grants want.
func hasScope(scope, scp, want string) bool {
	for _, v := range [...]string{scope, scp} {
		if v == "" {
			continue
		}
		if s, ok := verify.JSONString(v); ok {
			if spaceListHas(s, want) {
				return true
			}
			continue
		}
		for el := range verify.JSONElements(v) {
			if s, ok := verify.JSONString(el); ok && s == want {
				return true
			}
		}
	}
	return false
}

// spaceListHas reports whether the space-separated list s holds want. (An
// array element is one scope token, compared whole: a scope token has no
// space, so an element holding one grants nothing.)
func spaceListHas(s, want string) bool {
	for s != "" {
		var item string
		item, s, _ = strings.Cut(s, " ")
		if item == want {
			return true
		}
	}
	return false
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return fmt.Sprint(i)
}
