package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// localIssuer is the issuer of the verify tests' configurations (its keys
// in jwks.json beside them) behind nginx.
const localIssuer = `
issuers:
  - issuer: https://local.test/
    jwks_file: jwks.json
    audiences: [api]
forward_auth: {proxy: nginx}
`

// policyConfig is a configuration with policies, routes and the any-token
// default, as docs/POLICIES.md shows them.
const policyConfig = localIssuer + `policies:
  - {name: orders-read, scopes: {any: [orders:read, orders:write]}}
  - name: orders-write
    scopes: {all: [orders:write]}
    claims: [{claim: groups, any_of: [ops, admins]}]
    expression: 'claims.level >= 3 && request.method != "DELETE"'
  - {name: admin, claims: [{claim: groups, equals: admins}]}
routes:
  - {methods: [POST, DELETE], path: /orders/**, policy: orders-write}
  - {path: /orders/**, policy: orders-read}
  - {path: /admin/**, policy: admin}
`

// TestVerifyPolicy runs verify --config with --policy or the original
// request (--method --host --path) through the real binary: the policy
// chosen as /v1/authz chooses it, each requirement shown by --explain, and
// exit 1 with "forbidden" when the policy refuses.
func TestVerifyPolicy(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte(policyConfig))
	now := time.Now()
	tok := func(extra map[string]any) string {
		c := claimsAt("https://local.test/", "api", now)
		for k, v := range extra {
			c[k] = v
		}
		return mintRS256(c)
	}
	reader := tok(map[string]any{"scope": "orders:read"})
	writer := tok(map[string]any{"scope": "orders:read orders:write", "groups": []string{"ops"}, "level": 3})
	junior := tok(map[string]any{"scope": "orders:write", "groups": []string{"ops"}, "level": 2})
	admin := tok(map[string]any{"groups": []string{"admins"}})
	expired := mintRS256(claimsAt("https://local.test/", "api", now.Add(-3*time.Hour)))
	tests := []struct {
		name       string
		args       []string
		token      string
		wantCode   int
		wantPolicy string   // the JSON's "policy"
		wantSteps  []string // the policy steps of --explain, check:ok|FAIL
		wantChosen string   // in the policy step's detail
	}{
		{"route-read-allowed", []string{"--method", "GET", "--path", "/orders/1"}, reader, 0, "orders-read",
			[]string{"policy:ok", "scopes:ok"}, "routes[1]: any-method any-host /orders/**"},
		{"route-write-forbidden-scopes", []string{"--method", "POST", "--path", "/orders"}, reader, 1, "orders-write",
			[]string{"policy:ok", "scopes:FAIL"}, "routes[0]: POST,DELETE"},
		{"route-write-allowed", []string{"--method", "POST", "--path", "/orders/7"}, writer, 0, "orders-write",
			[]string{"policy:ok", "scopes:ok", "claims:ok", "expression:ok"}, "orders-write"},
		{"route-write-forbidden-expression", []string{"--method", "POST", "--path", "/orders/7"}, junior, 1, "orders-write",
			[]string{"policy:ok", "scopes:ok", "claims:ok", "expression:FAIL"}, "orders-write"},
		{"method-defaults-to-get", []string{"--path", "/orders/1"}, reader, 0, "orders-read",
			[]string{"policy:ok", "scopes:ok"}, "GET (no host) /orders/1"},
		// A dot segment is ambiguous (the application may route it
		// otherwise), refused as forward-auth refuses it.
		{"dot-segments-denied", []string{"--path", "/orders/../admin/x"}, reader, 1, "",
			[]string{"policy:FAIL"}, "ambiguous"},
		{"empty-segment-denied", []string{"--path", "//orders/1"}, reader, 1, "",
			[]string{"policy:FAIL"}, "ambiguous"},
		{"encoded-slash-denied", []string{"--path", "/orders%2F..%2Fadmin"}, admin, 1, "",
			[]string{"policy:FAIL"}, "ambiguous"},
		{"no-route-any-token", []string{"--path", "/public/x", "--host", "api.example.com:443"}, reader, 0, "",
			[]string{"policy:ok"}, "any valid token (no route matched GET api.example.com /public/x"},
		{"explicit-policy", []string{"--policy", "admin"}, admin, 0, "admin",
			[]string{"policy:ok", "claims:ok"}, "admin (--policy)"},
		{"explicit-policy-forbidden", []string{"--policy", "admin"}, writer, 1, "admin",
			[]string{"policy:ok", "claims:FAIL"}, "admin (--policy)"},
		{"explicit-policy-reads-request-unknown", []string{"--policy", "orders-write"}, writer, 1, "orders-write",
			[]string{"policy:ok", "scopes:ok", "claims:ok", "request:FAIL"}, "no original request"},
		{"invalid-token-no-policy-step", []string{"--path", "/orders/1"}, expired, 1, "orders-read", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"verify", "--explain", "--config", cfg}, tt.args...)
			r := runBin(t, nil, "", append(args, tt.token)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			var steps []string
			chosen := ""
			policyRows := false
			for _, line := range strings.Split(r.stdout, "\n") {
				f := strings.Fields(line)
				if len(f) < 3 || (f[2] != "ok" && f[2] != "FAIL") {
					continue
				}
				if f[1] == "policy" {
					policyRows = true
					chosen = strings.Join(f[3:], " ")
				}
				if policyRows {
					steps = append(steps, f[1]+":"+f[2])
				}
			}
			if !slices.Equal(steps, tt.wantSteps) {
				t.Errorf("policy steps = %q, want %q\n%s", steps, tt.wantSteps, r.stdout)
			}
			if !strings.Contains(chosen, tt.wantChosen) {
				t.Errorf("policy step %q does not say %q", chosen, tt.wantChosen)
			}
			got := decodeJSONLine(t, r.stdout)
			wantValid, wantAllowed := tt.wantCode == 0 || tt.wantSteps != nil, tt.wantCode == 0
			if got["valid"] != wantValid || got["allowed"] != wantAllowed {
				t.Errorf("valid %v allowed %v, want %v %v: %v", got["valid"], got["allowed"], wantValid, wantAllowed, got)
			}
			if tt.wantCode == 1 && tt.wantSteps != nil && got["error"] != "forbidden" {
				t.Errorf("error = %v, want forbidden", got["error"])
			}
			if tt.wantSteps == nil && got["error"] != "expired" {
				t.Errorf("error = %v, want expired", got["error"])
			}
			if got["policy"] != tt.wantPolicy {
				t.Errorf("policy = %v, want %q", got["policy"], tt.wantPolicy)
			}
		})
	}
}

// TestVerifyPolicyUsage checks the usage errors of the policy flags: exit 2
// naming the flag.
func TestVerifyPolicyUsage(t *testing.T) {
	dir := t.TempDir()
	jwksFile := writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte(policyConfig))
	token := mintRS256(claimsAt("https://local.test/", "api", time.Now()))
	tests := []struct {
		name, want string
		args       []string
	}{
		{"unknown-policy", `--policy "nope" is not a policy of`, []string{"--config", cfg, "--policy", "nope"}},
		{"policy-without-config", "need --config", []string{"--jwks", jwksFile, "--policy", "admin"}},
		{"path-without-config", "need --config", []string{"--jwks", jwksFile, "--path", "/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runApp(t, nil, "", append(append([]string{"verify"}, tt.args...), token)...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tt.want)
			}
		})
	}
	// Without --explain: the verdict alone, no table.
	r0 := runApp(t, nil, "", "verify", "--config", cfg, "--policy", "admin", token)
	if got := decodeJSONLine(t, r0.stdout); r0.code != 1 || got["allowed"] != false || got["error"] != "forbidden" || strings.Contains(r0.stdout, "CHECK") {
		t.Errorf("verify --policy admin without --explain: exit %d, %q", r0.code, r0.stdout)
	}
	// Without the policy flags, verify --config only verifies (exit 0,
	// no "allowed").
	r := runApp(t, nil, "", "verify", "--config", cfg, token)
	if got := decodeJSONLine(t, r.stdout); r.code != 0 || got["allowed"] != nil {
		t.Errorf("verify --config without policy flags: exit %d, %v", r.code, got)
	}
}
