package policy_test

import (
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
)

// TestEmptyMethodsListMatchesAnyMethod: Route.Methods empty means any
// method (the Route doc, POLICIES.md). An empty but non-nil list (YAML
// `methods: []`) matched no method at all, and the request fell through to
// a laxer route.
func TestEmptyMethodsListMatchesAnyMethod(t *testing.T) {
	s := mustSet(t, policy.Options{
		Policies: []policy.Spec{{Name: "admin", Scopes: policy.Scopes{All: []string{"admin"}}}, {Name: "public", AllowAnonymous: true}},
		Routes: []policy.Route{
			{Methods: []string{}, Path: "/admin/**", Policy: "admin"},
			{Path: "/**", Policy: "public"},
		},
	})
	o := request.Original{Method: "GET", Host: "api.example.com", Path: "/admin/users"}
	if got := s.Select(o).Name(); got != "admin" {
		t.Errorf("GET /admin/users chose %q, want admin (methods: [] is 'any'); route: %s", got, s.RouteString(0))
	}
}

// TestEscapedClaimNameInExpression: a claim name spelled with a JSON
// escape is the same claim to every JSON reader, and to the policies.
func TestEscapedClaimNameInExpression(t *testing.T) {
	p := one(t, policy.Spec{Name: "noact", Expression: `!has(claims.act)`})
	if err := p.Evaluate(result(`{"sub":"u","\u0061ct":{"sub":"admin"}}`), getOrders); err == nil {
		t.Errorf("escaped act claim passed !has(claims.act)")
	}
	p2 := one(t, policy.Spec{Name: "noact2", Expression: `!("act" in claims)`})
	if err := p2.Evaluate(result(`{"sub":"u","\u0061ct":{"sub":"admin"}}`), getOrders); err == nil {
		t.Errorf("escaped act claim passed !(act in claims)")
	}
	p3 := one(t, policy.Spec{Name: "grp", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}})
	if err := p3.Evaluate(result(`{"gr\u006fups":["admins"]}`), getOrders); err != nil {
		t.Logf("escaped groups denied (fail-closed): %v", err)
	}
}
