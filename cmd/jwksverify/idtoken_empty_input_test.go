package main

import (
	"testing"
	"time"
)

// TestVerifyIDTokenEmptyInput: an ID-token input flag given an empty value
// (--nonce "$NONCE" with the variable unset) is a usage error, as
// /v1/verify's empty "nonce" is 400: it was read as "not asked", so an ID
// token carrying another login's nonce (or at_hash of another access token)
// verified, exit 0.
func TestVerifyIDTokenEmptyInput(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "idt.yaml", []byte("issuers:\n  - issuer: https://idp.test/\n    jwks_file: jwks.json\n    audiences: [web-app]\n    id_token: {client_ids: [web-app]}\n"))
	now := time.Now().Truncate(time.Second)
	c := claimsAt("https://idp.test/", "web-app", now)
	c["nonce"], c["at_hash"], c["c_hash"], c["auth_time"], c["acr"] = "attackers-nonce", "AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAA", now.Add(-time.Hour).Unix(), "bronze"
	tok := mintRS256(c)
	for _, flag := range []string{"--nonce", "--access-token", "--code", "--max-age", "--acr"} {
		t.Run(flag[2:], func(t *testing.T) {
			r := runApp(t, nil, "", "verify", "--config", cfg, "--kind", "id_token", flag, "", tok)
			if r.code != exitUsage {
				t.Fatalf("verify --kind id_token %s '' = exit %d, want %d (usage)\nstdout: %s\nstderr: %s", flag, r.code, exitUsage, r.stdout, r.stderr)
			}
		})
	}
}
