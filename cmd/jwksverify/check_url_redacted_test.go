package main

import (
	"strings"
	"testing"
)

// TestCheckDoesNotPrintTheJWKSURLsQuery: a jwks_url's query and fragment
// may carry a credential (an API key an IdP gateway wants), which the jwks
// package leaves out of every log line and error it writes. `jwksverify
// check` printed the configured URL whole, on stdout offline and on stderr
// online, into the CI log that runs it, next to the redacted URL of the
// fetch's own error.
func TestCheckDoesNotPrintTheJWKSURLsQuery(t *testing.T) {
	const secret = "ck-live-0123456789abcdef"
	dir := t.TempDir()
	idp := idpServer(t, testJWKS())
	tests := []struct {
		name string
		url  string
		args []string
		want int
	}{
		{"offline", "https://idp.test/jwks?api_key=" + secret + "#" + secret, nil, 0},
		{"online", idp.URL + "/jwks?api_key=" + secret, []string{"--online"}, 0},
		{"online-refused", idp.URL + "/nope?api_key=" + secret, []string{"--online"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeFile(t, dir, tt.name+".yaml", []byte("issuers:\n  - issuer: "+idp.URL+"\n    jwks_url: "+tt.url+"\n"))
			r := runApp(t, nil, "", append([]string{"check", "--config", cfg}, tt.args...)...)
			if r.code != tt.want {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.want, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("the output repeats the URL's query:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, "jwks_url ") {
				t.Errorf("the output does not name the source:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
			}
		})
	}
}
