package config

import (
	"strings"
	"testing"
)

// TestNullListItemRefused: a list item left empty (`- ` with nothing after
// it, as a template whose variable was unset leaves it, or `[~]`) is a
// null that yaml drops from a list of strings: `audiences: [~]` planned no
// aud check, `required_claims: [~]` required nothing (not even exp),
// a policy's `scopes.all: [~]` or `issuers: [~]` asked for nothing. Each is
// refused with the item's path, as `audiences: [”]` is.
func TestNullListItemRefused(t *testing.T) {
	const base = "forward_auth: {proxy: nginx}\nissuers:\n  - issuer: https://idp.example.com/\n    discovery: true\n"
	tests := []struct{ name, doc, want string }{
		{"audiences", base + "    audiences:\n      - \n", "issuers[0].audiences[0]"},
		{"audiences-flow", base + "    audiences: [~]\n", "issuers[0].audiences[0]"},
		{"audiences-second", base + "    audiences: [api, null]\n", "issuers[0].audiences[1]"},
		{"required_claims", base + "    required_claims:\n      - \n", "issuers[0].required_claims[0]"},
		{"policy-scopes-all", base + "policies:\n  - name: admin\n    scopes:\n      all:\n        - \ndefault_policy: admin\n", "policies[0].scopes.all[0]"},
		{"policy-scopes-any", base + "policies:\n  - name: admin\n    scopes: {any: [~]}\ndefault_policy: admin\n", "policies[0].scopes.any[0]"},
		{"policy-issuers", base + "policies:\n  - name: admin\n    issuers: [~]\n    scopes: {all: [x]}\n", "policies[0].issuers[0]"},
		{"route-methods", base + "policies: [{name: a, scopes: {all: [x]}}, {name: b, allow_anonymous: true}]\nroutes:\n  - {methods: [~], path: /public, policy: b}\ndefault_policy: a\n", "routes[0].methods[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, tt.doc)
			if err == nil {
				is := p.Issuers[0].Verify
				t.Fatalf("Parse() accepted it: audiences %q, required_claims %q (nil %v)", is.Audiences, is.RequiredClaims, is.RequiredClaims == nil)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse() = %v, want the path %s", err, tt.want)
			}
		})
	}
}
