package main

import (
	"strings"
	"testing"
	"time"
)

// TestVerifyStdinReadsTheWholeInput: `verify -` read at most the token
// limit and 1 KiB more, trimmed white space and verified what was left, so
// an input of a valid token, more than 1 KiB of white space and anything
// after it (another token, a forged header, garbage) was judged valid
// (exit 0): the part after the padding was never read. An input larger than
// a token and its surrounding white space is too large, whatever it ends
// with.
func TestVerifyStdinReadsTheWholeInput(t *testing.T) {
	dir := t.TempDir()
	jwksFile := writeFile(t, dir, "jwks.json", testJWKS())
	rs := mintRS256(claimsAt("https://idp.test/", "api", time.Now()))
	pad := strings.Repeat(" ", 64<<10)
	tests := []struct {
		name, stdin string
		want        int
		wantClass   string
	}{
		{"token", rs + "\n", 0, ""},
		{"token-padding-garbage", rs + pad + "garbage", 1, "token_too_large"},
		{"token-padding-token", rs + pad + rs, 1, "token_too_large"},
		{"padding-token", pad + rs, 1, "token_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runApp(t, nil, tt.stdin, "verify", "--jwks", jwksFile, "-")
			if r.code != tt.want {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.want, r.stdout, r.stderr)
			}
			if tt.wantClass != "" {
				if got := decodeJSONLine(t, r.stdout); got["error"] != tt.wantClass {
					t.Errorf("error = %v, want %s", got["error"], tt.wantClass)
				}
			}
		})
	}
}
