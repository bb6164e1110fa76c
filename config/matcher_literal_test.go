package config

import (
	"encoding/json"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/verify"
)

// TestMatcherNumberLiteral: claim matchers compare "by JSON type and
// value (numbers numerically and exactly)". YAML reads some plain scalars
// as numbers of another value than the one written — 012 as octal 10
// (YAML 1.2 reads it as 12), 1e-400 as 0 — and 1e400 as the string
// "1e400". Each loaded silently as a matcher for another value: a token
// whose claim is that other value was allowed. Such a literal must be
// refused at load, or read as the value written.
func TestMatcherNumberLiteral(t *testing.T) {
	for _, tt := range []struct{ literal, allowedClaim string }{
		{"012", `10`},
		{"0012", `10`},
		{"1e-400", `0`},
		{"1e400", `"1e400"`},
	} {
		t.Run(tt.literal, func(t *testing.T) {
			for _, m := range []string{"equals: " + tt.literal, "any_of: [" + tt.literal + "]"} {
				p, err := parse(t, disc+"policies:\n  - {name: a, claims: [{claim: dept, "+m+"}]}\ndefault_policy: a\n")
				if err != nil {
					t.Logf("%s refused at load: %v", m, err)
					continue
				}
				pol, _ := p.Server.Policies.Lookup("a")
				res := &verify.Result{Claims: json.RawMessage(`{"dept":` + tt.allowedClaim + `}`)}
				if err := pol.Evaluate(res, policy.Request{}); err == nil {
					t.Errorf("%s loaded, and a token with dept %s is allowed: the matcher compares with another value than the one written", m, tt.allowedClaim)
				}
			}
		})
	}
	// What is a JSON number, a string or a bool still loads as written.
	p, err := parse(t, disc+"policies:\n  - {name: a, claims: [{claim: a, equals: 12}, {claim: b, any_of: [3.0, \"012\", true]}, {claim: c, equals: -0}]}\ndefault_policy: a\n")
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := p.Server.Policies.Lookup("a")
	if err := pol.Evaluate(&verify.Result{Claims: json.RawMessage(`{"a":12.0,"b":"012","c":0}`)}, policy.Request{}); err != nil {
		t.Errorf("Evaluate() = %v, want allowed", err)
	}
}
