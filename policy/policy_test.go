package policy_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/policy/celexpr"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

const issA, issB = "https://a.example/", "https://b.example/"

func result(claims string) *verify.Result {
	return &verify.Result{ConfiguredIssuer: issA, Issuer: issA, Claims: json.RawMessage(claims), Header: json.RawMessage(`{"alg":"ES256","kid":"k1"}`)}
}

func mustSet(t testing.TB, opts policy.Options) *policy.Set {
	t.Helper()
	opts.Issuers = []string{issA, issB}
	opts.Compiler = &celexpr.Compiler{}
	s, err := policy.New(opts)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return s
}

func one(t testing.TB, sp policy.Spec) *policy.Policy {
	t.Helper()
	s := mustSet(t, policy.Options{Policies: []policy.Spec{sp}})
	p, ok := s.Lookup(sp.Name)
	if !ok {
		t.Fatalf("Lookup(%q) = false", sp.Name)
	}
	return p
}

var getOrders = policy.Request{Known: true, Original: request.Original{Method: "GET", Host: "api.example.com", Path: "/orders/1"}}

// sentAs is a known GET of target as request.FromParts reads it.
func sentAs(target string) policy.Request {
	o, err := request.FromParts("GET", "", "api.example.com", target)
	if err != nil {
		panic(err)
	}
	return policy.Request{Known: true, Original: o}
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name    string
		spec    policy.Spec
		claims  string
		issuer  string
		req     policy.Request
		wantReq string // "" = allowed
	}{
		{"no-requirements", policy.Spec{}, `{"sub":"u"}`, "", getOrders, ""},
		{"issuers-match", policy.Spec{Issuers: []string{issA}}, `{}`, "", getOrders, ""},
		{"issuers-other", policy.Spec{Issuers: []string{issB}}, `{}`, "", getOrders, policy.ReqIssuers},
		{"scope-string-all", policy.Spec{Scopes: policy.Scopes{All: []string{"a", "b"}}}, `{"scope":"b x a"}`, "", getOrders, ""},
		{"scope-string-missing", policy.Spec{Scopes: policy.Scopes{All: []string{"a", "b"}}}, `{"scope":"a"}`, "", getOrders, policy.ReqScopes},
		{"scope-prefix-is-not-scope", policy.Spec{Scopes: policy.Scopes{All: []string{"orders"}}}, `{"scope":"orders:read ordersx"}`, "", getOrders, policy.ReqScopes},
		{"scp-array", policy.Spec{Scopes: policy.Scopes{All: []string{"a"}}}, `{"scp":["x","a"]}`, "", getOrders, ""},
		{"scp-string", policy.Spec{Scopes: policy.Scopes{All: []string{"a"}}}, `{"scp":"x a"}`, "", getOrders, ""},
		{"scope-array", policy.Spec{Scopes: policy.Scopes{All: []string{"a"}}}, `{"scope":["a"]}`, "", getOrders, ""},
		{"union-scope-scp", policy.Spec{Scopes: policy.Scopes{All: []string{"a", "b"}}}, `{"scope":"a","scp":["b"]}`, "", getOrders, ""},
		{"array-element-with-space-is-one-token", policy.Spec{Scopes: policy.Scopes{All: []string{"a"}}}, `{"scp":["a b"]}`, "", getOrders, policy.ReqScopes},
		{"scope-escaped", policy.Spec{Scopes: policy.Scopes{All: []string{"a/b"}}}, `{"scope":"a\/b"}`, "", getOrders, ""},
		{"scope-not-string", policy.Spec{Scopes: policy.Scopes{All: []string{"1"}}}, `{"scope":1,"scp":[1,true]}`, "", getOrders, policy.ReqScopes},
		{"scopes-none", policy.Spec{Scopes: policy.Scopes{Any: []string{"a"}}}, `{"sub":"u"}`, "", getOrders, policy.ReqScopes},
		{"scopes-any-one", policy.Spec{Scopes: policy.Scopes{Any: []string{"a", "b"}}}, `{"scope":"b"}`, "", getOrders, ""},
		{"scopes-any-none", policy.Spec{Scopes: policy.Scopes{Any: []string{"a", "b"}}}, `{"scope":"c"}`, "", getOrders, policy.ReqScopes},
		{"claim-array-any-of", policy.Spec{Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins", "ops"}}}}, `{"groups":["dev","ops"]}`, "", getOrders, ""},
		{"claim-array-none", policy.Spec{Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}}, `{"groups":["dev"]}`, "", getOrders, policy.ReqClaims},
		{"claim-string-equals", policy.Spec{Claims: []policy.Claim{{Claim: "tid", Equals: "t1"}}}, `{"tid":"t1"}`, "", getOrders, ""},
		{"claim-string-other", policy.Spec{Claims: []policy.Claim{{Claim: "tid", Equals: "t1"}}}, `{"tid":"t2"}`, "", getOrders, policy.ReqClaims},
		{"claim-bool", policy.Spec{Claims: []policy.Claim{{Claim: "email_verified", Equals: true}}}, `{"email_verified":true}`, "", getOrders, ""},
		{"claim-bool-string-is-not-bool", policy.Spec{Claims: []policy.Claim{{Claim: "email_verified", Equals: true}}}, `{"email_verified":"true"}`, "", getOrders, policy.ReqClaims},
		{"claim-string-bool-is-not-string", policy.Spec{Claims: []policy.Claim{{Claim: "v", Equals: "true"}}}, `{"v":true}`, "", getOrders, policy.ReqClaims},
		// A number is only ever a number: 0 is not a string or a bool want
		// (whose number part is the zero value).
		{"claim-zero-is-not-string", policy.Spec{Claims: []policy.Claim{{Claim: "role", AnyOf: []any{"admin"}}}}, `{"role":0}`, "", getOrders, policy.ReqClaims},
		{"claim-zero-is-not-bool", policy.Spec{Claims: []policy.Claim{{Claim: "email_verified", Equals: true}}}, `{"email_verified":0}`, "", getOrders, policy.ReqClaims},
		{"claim-number-int-float", policy.Spec{Claims: []policy.Claim{{Claim: "level", Equals: 3}}}, `{"level":3.0}`, "", getOrders, ""},
		{"claim-number-exp", policy.Spec{Claims: []policy.Claim{{Claim: "level", Equals: 300}}}, `{"level":3e2}`, "", getOrders, ""},
		{"claim-number-float-config", policy.Spec{Claims: []policy.Claim{{Claim: "level", Equals: 0.5}}}, `{"level":5E-1}`, "", getOrders, ""},
		{"claim-number-json-number", policy.Spec{Claims: []policy.Claim{{Claim: "n", Equals: json.Number("9007199254740993")}}}, `{"n":9007199254740992}`, "", getOrders, policy.ReqClaims},
		{"claim-number-exact", policy.Spec{Claims: []policy.Claim{{Claim: "n", Equals: json.Number("9007199254740993")}}}, `{"n":9007199254740993}`, "", getOrders, ""},
		{"claim-zero-negative-zero", policy.Spec{Claims: []policy.Claim{{Claim: "n", Equals: 0}}}, `{"n":-0.0}`, "", getOrders, ""},
		{"claim-number-string-is-not-number", policy.Spec{Claims: []policy.Claim{{Claim: "n", Equals: 3}}}, `{"n":"3"}`, "", getOrders, policy.ReqClaims},
		{"claim-number-other", policy.Spec{Claims: []policy.Claim{{Claim: "n", Equals: 3}}}, `{"n":30}`, "", getOrders, policy.ReqClaims},
		{"claim-missing", policy.Spec{Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}}, `{}`, "", getOrders, policy.ReqClaims},
		{"claim-null", policy.Spec{Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}}, `{"groups":null}`, "", getOrders, policy.ReqClaims},
		{"claim-object-never-equals", policy.Spec{Claims: []policy.Claim{{Claim: "o", Equals: "x"}}}, `{"o":{"x":"x"}}`, "", getOrders, policy.ReqClaims},
		{"claim-nested-array-never-equals", policy.Spec{Claims: []policy.Claim{{Claim: "g", Equals: "x"}}}, `{"g":[["x"]]}`, "", getOrders, policy.ReqClaims},
		{"claim-escaped-name", policy.Spec{Claims: []policy.Claim{{Claim: "tid", Equals: "t1"}}}, `{"t\u0069d":"t\u0031"}`, "", getOrders, ""},
		{"claims-all-must-hold", policy.Spec{Claims: []policy.Claim{{Claim: "a", Equals: 1}, {Claim: "b", Equals: 2}}}, `{"a":1,"b":3}`, "", getOrders, policy.ReqClaims},
		{"expression-true", policy.Spec{Expression: `claims.tid == "t1" && request.method != "DELETE"`}, `{"tid":"t1"}`, "", getOrders, ""},
		{"expression-false", policy.Spec{Expression: `claims.tid == "t1" && request.method != "GET"`}, `{"tid":"t1"}`, "", getOrders, policy.ReqExpression},
		{"expression-numbers", policy.Spec{Expression: `claims.level >= 3 && claims.level == 3`}, `{"level":3}`, "", getOrders, ""},
		{"expression-header-issuer", policy.Spec{Expression: `header.kid == "k1" && issuer == "https://a.example/"`}, `{}`, "", getOrders, ""},
		{"expression-path", policy.Spec{Expression: `request.path.startsWith("/orders/") && request.host == "api.example.com"`}, `{}`, "", getOrders, ""},
		{"expression-runtime-error-missing-claim", policy.Spec{Expression: `claims.missing == "x"`}, `{}`, "", getOrders, policy.ReqExpression},
		{"expression-runtime-error-negated", policy.Spec{Expression: `!(claims.missing == "x")`}, `{}`, "", getOrders, policy.ReqExpression},
		{"expression-runtime-error-type", policy.Spec{Expression: `claims.tid + 1 == 2`}, `{"tid":"t1"}`, "", getOrders, policy.ReqExpression},
		{"expression-cost-limit", policy.Spec{Expression: `claims.l.all(x, claims.l.all(y, claims.l.all(z, x == y || y != z)))`}, `{"l":[` + strings.Repeat(`1,`, 60) + `1]}`, "", getOrders, policy.ReqExpression},
		{"expression-needs-request-unknown", policy.Spec{Expression: `request.method == "GET"`}, `{}`, "", policy.Request{}, policy.ReqRequest},
		{"expression-needs-request-two-spellings", policy.Spec{Expression: `request.path.startsWith("/public/") || claims.tid == "admin"`}, `{"tid":"t1"}`, "", sentAs("/%70ublic/x"), policy.ReqRequest},
		// Only the hex digits' case differs (.NET's HttpUtility.UrlEncode
		// writes %c3%a9): no router reads another segment, and the
		// expression's request.path is the sent path but for that case.
		{"expression-needs-request-hex-case-only", policy.Spec{Expression: `request.path.startsWith("/files/") && request.method == "GET"`}, `{}`, "", sentAs("/files/caf%c3%a9"), ""},
		{"expression-needs-request-hex-case-and-unreserved", policy.Spec{Expression: `request.path.startsWith("/public/")`}, `{}`, "", sentAs("/%70ublic/caf%c3%a9"), policy.ReqRequest},
		{"expression-without-request-two-spellings", policy.Spec{Expression: `claims.tid == "t1"`}, `{"tid":"t1"}`, "", sentAs("/%70ublic/x"), ""},
		{"expression-without-request-unknown", policy.Spec{Expression: `claims.tid == "t1"`}, `{"tid":"t1"}`, "", policy.Request{}, ""},
		{"order-issuers-first", policy.Spec{Issuers: []string{issB}, Scopes: policy.Scopes{All: []string{"a"}}}, `{}`, "", getOrders, policy.ReqIssuers},
		{"issuer-b", policy.Spec{Issuers: []string{issB}}, `{}`, issB, getOrders, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = "p"
			p := one(t, tt.spec)
			res := result(tt.claims)
			if tt.issuer != "" {
				res.ConfiguredIssuer = tt.issuer
			}
			err := p.Evaluate(res, tt.req)
			// Explain decides the same, and its last step is the failure.
			steps, xerr := p.Explain(res, tt.req)
			if (xerr == nil) != (err == nil) || (err != nil && xerr.Error() != err.Error()) {
				t.Fatalf("Explain() = %v, Evaluate() = %v", xerr, err)
			}
			for i, st := range steps {
				if last := i == len(steps)-1; st.OK == (last && err != nil) {
					t.Fatalf("Explain() step %d = %+v (decision %v)", i, st, err)
				}
			}
			if err != nil && (len(steps) == 0 || steps[len(steps)-1].Check != tt.wantReq) {
				t.Fatalf("Explain() = %+v, want a last step %s", steps, tt.wantReq)
			}
			if tt.wantReq == "" {
				if err != nil {
					t.Fatalf("Evaluate() = %v, want allowed", err)
				}
				return
			}
			var d *policy.Denial
			if !errors.As(err, &d) || d.Requirement != tt.wantReq {
				t.Fatalf("Evaluate() = %v, want a denial of %s", err, tt.wantReq)
			}
			if !errors.Is(err, verify.ErrForbidden) || !errors.Is(err, verify.ErrDenied) || verify.Class(err) != "forbidden" {
				t.Fatalf("Evaluate() = %v: does not match verify.ErrForbidden / class forbidden", err)
			}
			if d.Policy != "p" {
				t.Fatalf("Denial.Policy = %q, want p", d.Policy)
			}
			if strings.HasPrefix(tt.name, "expression-runtime-error") || tt.name == "expression-cost-limit" {
				if d.Err == nil {
					t.Fatalf("Denial.Err = nil, want the run-time error (logged)")
				}
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name      string
		opts      policy.Options
		wantField string
	}{
		{"bad-name", policy.Options{Policies: []policy.Spec{{Name: "Orders"}}}, "policies[0].name"},
		{"duplicate-name", policy.Options{Policies: []policy.Spec{{Name: "a"}, {Name: "a"}}}, "policies[1].name"},
		{"unknown-issuer", policy.Options{Policies: []policy.Spec{{Name: "a", Issuers: []string{"https://c.example/"}}}}, "policies[0] (a).issuers[0]"},
		{"bad-scope", policy.Options{Policies: []policy.Spec{{Name: "a", Scopes: policy.Scopes{All: []string{"a b"}}}}}, "policies[0] (a).scopes.all[0]"},
		{"claim-no-matcher", policy.Options{Policies: []policy.Spec{{Name: "a", Claims: []policy.Claim{{Claim: "g"}}}}}, "policies[0] (a).claims[0]"},
		{"claim-both", policy.Options{Policies: []policy.Spec{{Name: "a", Claims: []policy.Claim{{Claim: "g", Equals: 1, AnyOf: []any{1}}}}}}, "policies[0] (a).claims[0]"},
		{"claim-object-value", policy.Options{Policies: []policy.Spec{{Name: "a", Claims: []policy.Claim{{Claim: "g", Equals: map[string]any{}}}}}}, "policies[0] (a).claims[0].equals"},
		{"claim-no-name", policy.Options{Policies: []policy.Spec{{Name: "a", Claims: []policy.Claim{{Equals: 1}}}}}, "policies[0] (a).claims[0].claim"},
		{"cel-does-not-compile", policy.Options{Policies: []policy.Spec{{Name: "a", Expression: `claims.tid ==`}}}, "policies[0] (a).expression: does not compile"},
		{"cel-unknown-variable", policy.Options{Policies: []policy.Spec{{Name: "a", Expression: `user.tid == "x"`}}}, "policies[0] (a).expression: does not compile"},
		{"cel-not-bool", policy.Options{Policies: []policy.Spec{{Name: "a", Expression: `request.method`}}}, "policies[0] (a).expression: is of type string, want bool"},
		{"cel-dyn-not-bool", policy.Options{Policies: []policy.Spec{{Name: "a", Expression: `claims.admin`}}}, "policies[0] (a).expression: is of type dyn, want bool"},
		{"route-unknown-policy", policy.Options{Routes: []policy.Route{{Path: "/x", Policy: "nope"}}}, "routes[0].policy"},
		{"route-bad-path", policy.Options{Policies: []policy.Spec{{Name: "a"}}, Routes: []policy.Route{{Path: "/a/../b", Policy: "a"}}}, "routes[0].path"},
		{"route-encoded-unreserved", policy.Options{Policies: []policy.Spec{{Name: "a"}}, Routes: []policy.Route{{Path: "/%61dmin/**", Policy: "a"}}}, "routes[0].path"},
		{"route-lower-case-escape", policy.Options{Policies: []policy.Spec{{Name: "a"}}, Routes: []policy.Route{{Path: "/a%3ab", Policy: "a"}}}, "routes[0].path"},
		{"route-star-in-segment", policy.Options{Policies: []policy.Spec{{Name: "a"}}, Routes: []policy.Route{{Path: "/a*", Policy: "a"}}}, "routes[0].path"},
		{"route-double-star-inside", policy.Options{Policies: []policy.Spec{{Name: "a"}}, Routes: []policy.Route{{Path: "/**/a", Policy: "a"}}}, "routes[0].path"},
		{"route-relative", policy.Options{Policies: []policy.Spec{{Name: "a"}}, Routes: []policy.Route{{Path: "a/**", Policy: "a"}}}, "routes[0].path"},
		{"route-lower-method", policy.Options{Policies: []policy.Spec{{Name: "a"}}, Routes: []policy.Route{{Methods: []string{"get"}, Policy: "a"}}}, "routes[0].methods[0]"},
		{"unknown-default", policy.Options{DefaultPolicy: "nope"}, "default_policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Issuers = []string{issA}
			tt.opts.Compiler = &celexpr.Compiler{}
			_, err := policy.New(tt.opts)
			if !errors.Is(err, policy.ErrInvalid) || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("New() = %v, want ErrInvalid naming %q", err, tt.wantField)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	s := mustSet(t, policy.Options{
		Policies: []policy.Spec{{Name: "write"}, {Name: "read"}, {Name: "admin"}, {Name: "public"}, {Name: "item"}, {Name: "fallback"}},
		Routes: []policy.Route{
			{Methods: []string{"POST", "PUT"}, Host: "API.example.com", Path: "/orders/**", Policy: "write"},
			{Path: "/orders/**", Policy: "read"},
			{Path: "/admin/**", Policy: "admin"},
			{Path: "/public", Policy: "public"},
			{Path: "/items/*/detail", Policy: "item"},
		},
		DefaultPolicy: "fallback",
	})
	tests := []struct {
		method, host, path, want string
	}{
		{"POST", "api.example.com", "/orders", "write"},
		{"POST", "api.example.com", "/orders/1", "write"},
		{"POST", "other.example.com", "/orders/1", "read"},
		{"GET", "api.example.com", "/orders/1", "read"},
		{"GET", "api.example.com", "/orders/", "read"},
		{"GET", "api.example.com", "/ordersx", "fallback"},
		{"GET", "", "/admin", "admin"},
		{"GET", "", "/admin/", "admin"},
		{"GET", "", "/admin/x/y", "admin"},
		{"GET", "", "/administrator", "fallback"},
		{"GET", "", "/public", "public"},
		{"GET", "", "/public/", "fallback"},
		{"GET", "", "/public/x", "fallback"},
		{"GET", "", "/items/7/detail", "item"},
		{"GET", "", "/items//detail", "fallback"},
		{"GET", "", "/items/7/8/detail", "fallback"},
		{"GET", "", "/", "fallback"},
		{"post", "api.example.com", "/orders/1", "read"}, // methods compare exactly
	}
	for _, tt := range tests {
		t.Run(tt.method+"-"+strings.ReplaceAll(tt.path, "/", "_"), func(t *testing.T) {
			got := s.Select(request.Original{Method: tt.method, Host: tt.host, Path: tt.path}).Name()
			if got != tt.want {
				t.Errorf("Select(%s %s%s) = %q, want %q", tt.method, tt.host, tt.path, got, tt.want)
			}
		})
	}
	if got := mustSet(t, policy.Options{}).Select(request.Original{Path: "/x"}); got.Name() != "" || got != mustSet(t, policy.Options{}).Default() {
		t.Errorf("Select with no routes and no default = %q, want the any-token policy", got.Name())
	}
	var nilSet *policy.Set
	if got := nilSet.Select(request.Original{}); got.Name() != "" {
		t.Errorf("nil Set Select = %q, want the any-token policy", got.Name())
	}
}

// TestSelectMethodCase: a request whose method a proxy forwards in lower
// case ("delete", which Traefik and Caddy pass on as sent, and Django and
// Flask then run as DELETE) is routed as the upper-case method, not to
// the default policy: no lower-case spelling skips a method's route.
func TestSelectMethodCase(t *testing.T) {
	s := mustSet(t, policy.Options{
		Policies:      []policy.Spec{{Name: "write", Scopes: policy.Scopes{All: []string{"orders:write"}}}, {Name: "open"}},
		Routes:        []policy.Route{{Methods: []string{"POST", "DELETE"}, Path: "/orders/**", Policy: "write"}},
		DefaultPolicy: "open",
	})
	for _, method := range []string{"DELETE", "POST"} {
		t.Run(method, func(t *testing.T) {
			o, err := request.FromParts(method, "https", "api.example.com", "/orders/1")
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Select(o).Name(); got != "write" {
				t.Errorf("Select(%s /orders/1) = %q, want %q", method, got, "write")
			}
		})
	}
	// Another spelling is no route's: it is refused before any route is
	// chosen (Django runs "delete" as DELETE, Go's ServeMux matches no
	// "DELETE /orders/{id}" pattern with it), never decided by the
	// default's open policy.
	for _, method := range []string{"delete", "Delete", "post"} {
		t.Run(method, func(t *testing.T) {
			if _, err := request.FromParts(method, "https", "api.example.com", "/orders/1"); !errors.Is(err, request.ErrAmbiguousMethod) {
				t.Errorf("FromParts(%s /orders/1) = %v, want ErrAmbiguousMethod", method, err)
			}
		})
	}
}

func TestPolicyAccessors(t *testing.T) {
	p := one(t, policy.Spec{Name: "p", Issuers: []string{issA}, Scopes: policy.Scopes{All: []string{"b", "a"}, Any: []string{"a", "c"}},
		AllowAnonymous: true, ClaimsToHeaders: map[string]string{"sub": "x-user"}, Expression: `request.path == "/"`})
	if p.Scopes() != "a b c" || !p.AllowAnonymous() || !p.NeedsRequest() || p.Issuers()[0] != issA {
		t.Errorf("accessors: scopes %q anonymous %v needs request %v issuers %v", p.Scopes(), p.AllowAnonymous(), p.NeedsRequest(), p.Issuers())
	}
	if h := p.ClaimHeaders(); len(h) != 1 || h[0] != (policy.ClaimHeader{Claim: "sub", Header: "X-User"}) {
		t.Errorf("ClaimHeaders() = %v", h)
	}
}

// TestClaimNames checks the claims the verifier is asked to index: those
// scopes and matchers read, and those an expression names.
func TestClaimNames(t *testing.T) {
	s := mustSet(t, policy.Options{Policies: []policy.Spec{
		{Name: "a", Scopes: policy.Scopes{Any: []string{"x"}}, Claims: []policy.Claim{{Claim: "groups", Equals: "ops"}}},
		{Name: "b", Expression: `claims.tid == "t1" && claims["level"] >= 3 && "groups" in claims`},
	}})
	want := []string{"groups", "level", "scope", "scp", "tid"}
	if got := s.ClaimNames(); !slices.Equal(got, want) {
		t.Errorf("ClaimNames() = %q, want %q", got, want)
	}
}

// TestExplainSteps checks the steps of Explain: every requirement the
// policy has, in order, up to the first that fails.
func TestExplainSteps(t *testing.T) {
	spec := policy.Spec{Name: "p", Issuers: []string{issA}, Scopes: policy.Scopes{All: []string{"a"}, Any: []string{"b", "c"}},
		Claims:     []policy.Claim{{Claim: "groups", AnyOf: []any{"ops"}}, {Claim: "level", Equals: 3}},
		Expression: `claims.tid == "t1"`}
	tests := []struct {
		name, claims string
		want         []string // check:ok|FAIL
	}{
		{"all-pass", `{"scope":"a c","groups":["ops"],"level":3,"tid":"t1"}`,
			[]string{"issuers:ok", "scopes:ok", "claims:ok", "claims:ok", "expression:ok"}},
		{"scopes-fail", `{"scope":"a","groups":["ops"],"level":3,"tid":"t1"}`,
			[]string{"issuers:ok", "scopes:FAIL"}},
		{"second-claim-fails", `{"scope":"a b","groups":["ops"],"level":4,"tid":"t1"}`,
			[]string{"issuers:ok", "scopes:ok", "claims:ok", "claims:FAIL"}},
		{"expression-false", `{"scope":"a b","groups":["ops"],"level":3,"tid":"t2"}`,
			[]string{"issuers:ok", "scopes:ok", "claims:ok", "claims:ok", "expression:FAIL"}},
		{"expression-error", `{"scope":"a b","groups":["ops"],"level":3}`,
			[]string{"issuers:ok", "scopes:ok", "claims:ok", "claims:ok", "expression:FAIL"}},
	}
	p := one(t, spec)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, _ := p.Explain(result(tt.claims), getOrders)
			var got []string
			for _, st := range steps {
				r := "ok"
				if !st.OK {
					r = "FAIL"
				}
				got = append(got, st.Check+":"+r)
				if st.Detail == "" || strings.Contains(st.Detail, "t2") || strings.Contains(st.Detail, "ops") {
					t.Errorf("step %+v: empty detail or a claim value", st)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Explain() steps = %q, want %q", got, tt.want)
			}
		})
	}
	if steps, err := one(t, policy.Spec{Name: "q"}).Explain(result(`{}`), getOrders); err != nil || len(steps) != 0 {
		t.Errorf("a policy without requirements: Explain() = %v, %v; want no step, allowed", steps, err)
	}
}

// TestChoose checks how a policy is chosen: by name, by the first route,
// by default, and the selections that fail.
func TestChoose(t *testing.T) {
	s := mustSet(t, policy.Options{
		Policies:      []policy.Spec{{Name: "read"}, {Name: "admin"}, {Name: "fallback"}},
		Routes:        []policy.Route{{Methods: []string{"GET"}, Path: "/orders/**", Policy: "read"}, {Host: "admin.example.com", Policy: "admin"}},
		DefaultPolicy: "fallback",
	})
	get := request.Original{Method: "GET", Host: "api.example.com", Path: "/orders/1"}
	tests := []struct {
		name       string
		policyName string
		o          request.Original
		oerr       error
		wantPolicy string // "-" none
		wantBy     string
		wantRoute  int
		wantErr    error
	}{
		{"by-name", "admin", get, nil, "admin", policy.ByName, -1, nil},
		{"by-name-without-request", "admin", request.Original{}, request.ErrMissing, "admin", policy.ByName, -1, nil},
		{"by-name-ambiguous", "admin", request.Original{}, request.ErrAmbiguousPath, "admin", policy.ByName, -1, policy.ErrAmbiguous},
		{"unknown-name", "nope", get, nil, "-", policy.ByName, -1, policy.ErrUnknownPolicy},
		{"first-route", "", get, nil, "read", policy.ByRoute, 0, nil},
		{"second-route", "", request.Original{Method: "POST", Host: "admin.example.com", Path: "/orders/1"}, nil, "admin", policy.ByRoute, 1, nil},
		{"default", "", request.Original{Method: "POST", Host: "api.example.com", Path: "/orders/1"}, nil, "fallback", policy.ByDefault, -1, nil},
		{"unrouted", "", request.Original{}, request.ErrMissing, "-", policy.ByRoute, -1, policy.ErrUnrouted},
		{"ambiguous", "", request.Original{}, request.ErrAmbiguousPath, "-", policy.ByRoute, -1, policy.ErrAmbiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := s.Choose(tt.policyName, tt.o, tt.oerr)
			got := "-"
			if c.Policy != nil {
				got = c.Policy.Name()
			}
			if got != tt.wantPolicy || c.By != tt.wantBy || c.Route != tt.wantRoute || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Choose() = {%s %s %d}, %v; want {%s %s %d}, %v", got, c.By, c.Route, err, tt.wantPolicy, tt.wantBy, tt.wantRoute, tt.wantErr)
			}
			if err != nil && !errors.Is(err, verify.ErrForbidden) {
				t.Fatalf("Choose() error %v does not match verify.ErrForbidden", err)
			}
		})
	}
	// Without routes, a missing request is no obstacle: the default decides.
	if c, err := mustSet(t, policy.Options{}).Choose("", request.Original{}, request.ErrMissing); err != nil || c.By != policy.ByDefault || c.Policy.Name() != "" {
		t.Errorf("no routes, no request: Choose() = %+v, %v; want the any-token default", c, err)
	}
	for i, want := range []string{"routes[0]: GET any-host /orders/**", "routes[1]: any-method admin.example.com /**", ""} {
		if got := s.RouteString(i); got != want {
			t.Errorf("RouteString(%d) = %q, want %q", i, got, want)
		}
	}
}
