package config

import (
	"strings"
	"testing"
)

// TestIssuersInTwoSpellingsRefused: two issuers whose names are one URL
// in two spellings — a trailing '/' more or less, the scheme or host in
// another case, the scheme's default port written out — are refused at
// load. Each is matched exactly, so each takes the tokens of its spelling
// under its own keys, audiences and policies; but the application behind
// reads the forwarded token's iss again, and any reader that compares
// issuer URLs as URLs (or trims the '/', as jwksverify's own discovery
// does) takes the tokens of one issuer's keys for the other's. Issuers
// that only look alike (Google's scheme-less accounts.google.com beside
// https://accounts.google.com, another path, another port) still load.
func TestIssuersInTwoSpellingsRefused(t *testing.T) {
	doc := func(a, b string) string {
		return "issuers:\n" +
			"  - {issuer: '" + a + "', jwks_url: 'https://keys.example.com/a'}\n" +
			"  - {issuer: '" + b + "', jwks_url: 'https://keys.example.com/b'}\n"
	}
	for _, tt := range []struct{ a, b string }{
		{"https://idp.example.com/", "https://idp.example.com"},
		{"https://idp.example.com/realms/prod", "https://idp.example.com/realms/prod/"},
		{"https://idp.example.com/", "https://IDP.example.com/"},
		{"https://idp.example.com/", "HTTPS://idp.example.com/"},
		{"https://idp.example.com/", "https://idp.example.com:443/"},
		{"http://idp.example.com/x", "http://idp.example.com:80/x/"},
		{"https://login.example.com/{tenantid}/v2.0", "https://Login.example.com/{tenantid}/v2.0"},
	} {
		t.Run(tt.b, func(t *testing.T) {
			_, err := parse(t, doc(tt.a, tt.b))
			if err == nil {
				t.Fatalf("Parse(%q beside %q) = nil, want an error naming both", tt.b, tt.a)
			}
			if !strings.Contains(err.Error(), "issuers[1].issuer") {
				t.Errorf("Parse() = %v, want it to name issuers[1].issuer", err)
			}
		})
	}
	for _, tt := range []struct{ a, b string }{
		{"https://accounts.google.com", "accounts.google.com"},
		{"https://idp.example.com/a", "https://idp.example.com/b"},
		{"https://idp.example.com/", "https://idp.example.com:8443/"},
		{"https://idp.example.com/realms/Prod", "https://idp.example.com/realms/prod"},
	} {
		t.Run("distinct/"+tt.b, func(t *testing.T) {
			if _, err := parse(t, doc(tt.a, tt.b)); err != nil {
				t.Fatalf("Parse(%q beside %q) = %v, want nil", tt.b, tt.a, err)
			}
		})
	}
}
