package main

import (
	"testing"
	"time"
)

// TestVerifyIDTokenMaxAgeBounds: --max-age in seconds was multiplied into
// a time.Duration unchecked: 18446744074 (about 585 years) wrapped to
// 0.29 s and every ID token was auth_too_old, and the largest Duration in
// seconds, plus the leeway, overflowed the library's bound to a negative
// one (auth_too_old too). A value of seconds beyond a Duration is a usage
// error; one within it is the bound it says.
func TestVerifyIDTokenMaxAgeBounds(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "idt.yaml", []byte("issuers:\n  - issuer: https://idp.test/\n    jwks_file: jwks.json\n    audiences: [web-app]\n    id_token: {client_ids: [web-app]}\n"))
	now := time.Now().Truncate(time.Second)
	c := claimsAt("https://idp.test/", "web-app", now)
	c["auth_time"] = now.Add(-time.Minute).Unix()
	tok := mintRS256(c)
	for _, tt := range []struct {
		maxAge   string
		wantCode int
	}{
		{"300", 0},
		{"9223372036", 0},           // the largest Duration, in whole seconds
		{"2562047h47m16s", 0},       // the same as a duration
		{"9223372037", exitUsage},   // beyond a Duration
		{"18446744074", exitUsage},  // wrapped to 0.29 s
		{"-18446744073", exitUsage}, // wrapped to a positive bound
	} {
		t.Run(tt.maxAge, func(t *testing.T) {
			r := runApp(t, nil, "", "verify", "--config", cfg, "--kind", "id_token", "--max-age", tt.maxAge, tok)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
		})
	}
}
