package main

import (
	"strings"
	"testing"
	"time"
)

// TestVerifyEmptyListItemNotAnything: a configuration whose audience or
// required scope was left empty (`- ` after a template's unset variable)
// is refused, exit 2 naming the key. It loaded: the audience list became
// empty (no aud check: a token for another API passed), the admin
// policy's scopes.all became empty (a token without the scope was
// allowed).
func TestVerifyEmptyListItemNotAnything(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte(`
issuers:
  - issuer: https://local.test/
    jwks_file: jwks.json
    audiences:
      - 
forward_auth: {proxy: nginx}
policies:
  - name: admin
    scopes:
      all:
        - 
`))
	other := mintRS256(claimsAt("https://local.test/", "another-api", time.Now()))
	for _, args := range [][]string{{"verify", "--config", cfg, other}, {"verify", "--config", cfg, "--policy", "admin", other}, {"check", "--config", cfg}} {
		r := runApp(t, nil, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "audiences[0]") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 naming issuers[0].audiences[0]", args[0:len(args)-1], r.code, r.stdout, r.stderr)
		}
	}
}
