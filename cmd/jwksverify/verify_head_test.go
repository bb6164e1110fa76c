package main

import (
	"testing"
	"time"
)

// TestVerifyHeadDecidedAsGet: the server decides a HEAD also as GET
// (0bc45e7); the CLI's verify --method HEAD --path must give the same
// verdict as the server for the same configuration.
func TestVerifyHeadDecidedAsGet(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte(`
issuers:
  - issuer: https://local.test/
    jwks_file: jwks.json
    audiences: [api]
forward_auth: {proxy: nginx}
policies:
  - {name: admin, claims: [{claim: groups, any_of: [admins]}]}
  - {name: anytoken}
routes:
  - {methods: [GET], path: /reports/**, policy: admin}
  - {path: /reports/**, policy: anytoken}
`))
	c := claimsAt("https://local.test/", "api", time.Now())
	c["groups"] = []string{"users"}
	user := mintRS256(c)
	r := runBin(t, nil, "", "verify", "--config", cfg, "--method", "HEAD", "--path", "/reports/q3", user)
	if r.code != 1 {
		t.Fatalf("verify --method HEAD /reports/q3 with a non-admin token: exit %d, want 1 (the server refuses it: HEAD runs as GET)\n%s", r.code, r.stdout)
	}
}
