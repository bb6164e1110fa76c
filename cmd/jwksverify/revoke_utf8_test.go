package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRevokeAddValueNotUTF8: a flag value that is not UTF-8 is a usage
// error, never sent. encoding/json writes each such byte as U+FFFD, so
// `revoke add --sub $'bob\x97'` revoked the subject "bob\uFFFD" (another
// subject: the one a token spelling "bob\ufffd" names) and exited 0, the
// answer naming the entry as if it were the one asked for.
func TestRevokeAddValueNotUTF8(t *testing.T) {
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
		{"--issuer", "https://i/", "--sub", "bob\x97"},
		{"--issuer", "https://i/", "--jti", "\xff"},
		{"--issuer", "https://i/", "--sid", "s\xc3"},
		{"--issuer", "https://i/", "--client-id", "app\xa0"},
		{"--issuer", "https://i/\x97"},
		{"--issuer", "https://i/", "--issued-before", "2026-12-05T10:00:00Z\x97"},
	} {
		bodies = nil
		r := runApp(t, env, "", append([]string{"revoke", "add"}, args...)...)
		if r.code != exitUsage || len(bodies) != 0 {
			t.Errorf("revoke add %q: exit %d, sent %q; want exit %d, nothing sent", args, r.code, bodies, exitUsage)
		}
		if r.code == exitUsage && !strings.Contains(r.stderr, "UTF-8") {
			t.Errorf("revoke add %q: stderr %q, want it to say the value is not UTF-8", args, r.stderr)
		}
	}
	// The control: a value in UTF-8 (not ASCII) is sent as it is.
	bodies = nil
	if r := runApp(t, env, "", "revoke", "add", "--issuer", "https://i/", "--sub", "zoë"); r.code != exitOK || len(bodies) != 1 || !strings.Contains(bodies[0], `"sub":"zoë"`) {
		t.Errorf("revoke add --sub zoë: exit %d, sent %q", r.code, bodies)
	}
}
