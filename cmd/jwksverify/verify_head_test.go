package main

import (
	"strings"
	"testing"
	"time"
)

// TestVerifyHeadDecidedAsGet: the server decides a HEAD also as GET
// (0bc45e7); the CLI's verify --method HEAD --path must give the same
// verdict as the server for the same configuration.
func TestVerifyHeadDecidedAsGet(t *testing.T) {
	cfg, user := adminRoutes(t, `
  - {methods: [GET], path: /reports/**, policy: admin}
  - {path: /reports/**, policy: anytoken}
`)
	r := runBin(t, nil, "", "verify", "--config", cfg, "--method", "HEAD", "--path", "/reports/q3", user)
	if r.code != 1 {
		t.Fatalf("verify --method HEAD /reports/q3 with a non-admin token: exit %d, want 1 (the server refuses it: HEAD runs as GET)\n%s", r.code, r.stdout)
	}
	if !strings.Contains(r.stdout, `"policy":"admin"`) {
		t.Errorf("verify body = %s, want \"policy\":\"admin\" (the policy that refused, as the server's 403 names it)", r.stdout)
	}
}

// TestVerifyOverrideToHeadDecidedAsGet: jwksverify verify decides a POST
// whose _method names HEAD as GET too, as the server does (an application
// runs it as HEAD, and a HEAD with the GET handler).
func TestVerifyOverrideToHeadDecidedAsGet(t *testing.T) {
	cfg, user := adminRoutes(t, `
  - {methods: [GET], path: /reports/**, policy: admin}
  - {path: /reports/**, policy: anytoken}
`)
	r := runBin(t, nil, "", "verify", "--config", cfg, "--method", "POST", "--path", "/reports/q3?_method=HEAD", user)
	if r.code != 1 || !strings.Contains(r.stdout, `"policy":"admin"`) {
		t.Fatalf("verify --method POST /reports/q3?_method=HEAD with a non-admin token: exit %d, want 1 naming admin (HEAD runs as GET)\n%s", r.code, r.stdout)
	}
}

// TestVerifyFormatSuffix: jwksverify verify decides /admin.json under the
// route of /admin too, as the server does (Rails runs it as /admin).
func TestVerifyFormatSuffix(t *testing.T) {
	cfg, user := adminRoutes(t, `
  - {path: /admin/**, policy: admin}
default_policy: anytoken
`)
	r := runBin(t, nil, "", "verify", "--config", cfg, "--explain", "--method", "GET", "--path", "/admin.json", user)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "format suffix") {
		t.Fatalf("verify --method GET /admin.json with a non-admin token: exit %d, want 1 naming the format suffix\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestVerifyRouteEndingInStar: jwksverify verify decides a path below a
// route ending in "*" that no route matches under that route's policy
// too, as the server does (Echo runs /items/1/x with /items/:id).
func TestVerifyRouteEndingInStar(t *testing.T) {
	cfg, user := adminRoutes(t, `
  - {methods: [DELETE], path: /items/*, policy: admin}
default_policy: anytoken
`)
	r := runBin(t, nil, "", "verify", "--config", cfg, "--explain", "--method", "DELETE", "--path", "/items/1/x", user)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "taking the rest of the path") {
		t.Fatalf("verify --method DELETE /items/1/x with a non-admin token: exit %d, want 1 naming the route ending in '*'\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The body names the refusing policy, as the server's does.
	if !strings.Contains(r.stdout, `"policy":"admin"`) {
		t.Errorf("verify body = %s, want \"policy\":\"admin\" (the policy that refused)", r.stdout)
	}
	if r := runBin(t, nil, "", "verify", "--config", cfg, "--method", "DELETE", "--path", "/other/1/x", user); r.code != 0 {
		t.Fatalf("verify --method DELETE /other/1/x: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// adminRoutes writes a configuration of the policies admin (groups admins)
// and anytoken with routes (YAML after "routes:"), and returns its path and
// a token of groups [users].
func adminRoutes(t *testing.T, routes string) (cfg, user string) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg = writeFile(t, dir, "cfg.yaml", []byte(localIssuer+`policies:
  - {name: admin, claims: [{claim: groups, any_of: [admins]}]}
  - {name: anytoken}
routes:`+routes))
	c := claimsAt("https://local.test/", "api", time.Now())
	c["groups"] = []string{"users"}
	return cfg, mintRS256(c)
}
