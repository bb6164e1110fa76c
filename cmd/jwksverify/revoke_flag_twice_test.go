package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRevokeAddFlagGivenTwice: a flag of revoke add given twice is a usage
// error, nothing sent. The flag package keeps the last value, so
// `revoke add --sub alice --sub bob` stored one entry, bob's, and exited 0:
// alice's tokens, which the operator asked to revoke too, kept passing
// (and --issuer twice revoked at the issuer named last).
func TestRevokeAddFlagGivenTwice(t *testing.T) {
	var bodies []string
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"e1"}`+"\n")
	}))
	defer admin.Close()
	env := map[string]string{"JWKSVERIFY_ADMIN_URL": admin.URL, "JWKSVERIFY_ADMIN_SECRET": "s3cret-s3cret-s3cret"}
	for _, args := range [][]string{
		{"--issuer", "https://i/", "--sub", "alice", "--sub", "bob"},
		{"--issuer", "https://i/", "--jti", "j1", "--jti=j2"},
		{"--issuer", "https://i/", "--sid", "s1", "--sid", "s2"},
		{"--issuer", "https://i/", "--client-id", "a", "--client-id", "b"},
		{"--issuer", "https://a/", "--issuer", "https://b/", "--sub", "alice"},
		{"--issuer", "https://i/", "--sub", "alice", "--issued-before", "2026-12-05T10:00:00Z", "--issued-before", "2026-01-01T00:00:00Z"},
	} {
		bodies = nil
		r := runApp(t, env, "", append([]string{"revoke", "add"}, args...)...)
		if r.code != exitUsage || len(bodies) != 0 {
			t.Errorf("revoke add %q: exit %d, sent %q; want exit %d, nothing sent", args, r.code, bodies, exitUsage)
		}
		if r.code == exitUsage && !strings.Contains(r.stderr, "twice") {
			t.Errorf("revoke add %q: stderr %q, want it to say the flag was given twice", args, r.stderr)
		}
	}
}
