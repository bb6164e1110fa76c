package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRevokeCommand: jwksverify revoke sends the admin API request with
// the client's credentials from the environment, prints the answer, and
// maps statuses to exit codes; usage errors exit 2 before any request.
func TestRevokeCommand(t *testing.T) {
	var last struct{ method, path, body, user, pass, auth string }
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last.method, last.path, last.body = r.Method, r.URL.RequestURI(), string(b)
		last.user, last.pass, _ = r.BasicAuth()
		last.auth = r.Header.Get("Authorization")
		switch {
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"e1","kind":"sub"}`+"\n")
		case r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/gone"):
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"not_found"}`+"\n")
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"unavailable"}`+"\n")
		}
	}))
	defer admin.Close()
	env := map[string]string{"JWKSVERIFY_ADMIN_URL": admin.URL, "JWKSVERIFY_ADMIN_SECRET": "s3cret-s3cret-s3cret"}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		check    func(t *testing.T, r result)
	}{
		{"add-sub", []string{"revoke", "add", "--client", "ops", "--issuer", "https://i/", "--sub", "alice", "--issued-before", "2026-12-05T10:00:00Z"}, 0, func(t *testing.T, r result) {
			if last.method != http.MethodPost || last.path != "/v1/revocations" || last.user != "ops" || last.pass != "s3cret-s3cret-s3cret" ||
				!strings.Contains(last.body, `"sub":"alice"`) || !strings.Contains(last.body, `"issued_before":"2026-12-05T10:00:00Z"`) {
				t.Errorf("request = %+v", last)
			}
			if !strings.Contains(r.stdout, `"id":"e1"`) {
				t.Errorf("stdout = %q", r.stdout)
			}
		}},
		{"list-bearer", []string{"revoke", "list", "--issuer", "https://i/"}, 3, func(t *testing.T, r result) {
			if last.path != "/v1/revocations?issuer=https%3A%2F%2Fi%2F" || last.auth != "Bearer s3cret-s3cret-s3cret" {
				t.Errorf("request = %+v", last)
			}
		}},
		{"delete", []string{"revoke", "delete", "--client", "ops", "e1"}, 0, func(t *testing.T, r result) {
			if last.method != http.MethodDelete || last.path != "/v1/revocations/e1" || !strings.Contains(r.stdout, `"deleted":"e1"`) {
				t.Errorf("request = %+v, stdout %q", last, r.stdout)
			}
		}},
		{"delete-unknown", []string{"revoke", "delete", "gone"}, 1, nil},
		{"no-operation", []string{"revoke"}, 2, nil},
		{"unknown-operation", []string{"revoke", "purge"}, 2, nil},
		{"add-without-issuer", []string{"revoke", "add", "--sub", "alice"}, 2, nil},
		// An empty value (--jti "$JTI" with JTI unset) is a mistake, not a
		// request to revoke every token of the issuer, which the same
		// command without the flag asks for.
		{"add-empty-jti", []string{"revoke", "add", "--issuer", "https://i/", "--jti", ""}, 2, func(t *testing.T, r result) {
			if !strings.Contains(r.stderr, "-jti") || !strings.Contains(r.stderr, "every token of the issuer") {
				t.Errorf("stderr = %q, want it to name -jti and say what leaving it out does", r.stderr)
			}
		}},
		{"add-empty-client-id", []string{"revoke", "add", "--issuer", "https://i/", "--client-id="}, 2, nil},
		{"add-empty-sid-and-sub", []string{"revoke", "add", "--issuer", "https://i/", "--sid", "", "--sub", "alice"}, 2, nil},
		{"delete-without-id", []string{"revoke", "delete"}, 2, nil},
		{"bad-admin-url", []string{"revoke", "list", "--admin", "127.0.0.1:9090"}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runApp(t, env, "", tt.args...)
			if r.code != tt.wantCode {
				t.Fatalf("exit = %d, want %d\n%s%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "s3cret") {
				t.Error("the output repeats the secret")
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestRevokeHelpWithoutAdmin: asking revoke for help, or naming an
// operation it does not have, is answered before the admin URL is looked
// for: a new user has none yet. Before, `jwksverify revoke --help` said
// only "--admin http(s)://HOST:PORT (or JWKSVERIFY_ADMIN_URL) is required".
func TestRevokeHelpWithoutAdmin(t *testing.T) {
	tests := []struct {
		args       []string
		wantCode   int
		wantStderr string
	}{
		{[]string{"revoke", "--help"}, 0, "Usage: jwksverify revoke add"},
		{[]string{"revoke", "-h"}, 0, "Usage: jwksverify revoke add"},
		{[]string{"revoke", "-help"}, 0, "Usage: jwksverify revoke add"},
		{[]string{"revoke", "add", "--help"}, 0, "Usage: jwksverify revoke add"},
		{[]string{"revoke", "purge"}, 2, `unknown operation "purge"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runApp(t, nil, "", tt.args...)
			if r.code != tt.wantCode || !strings.Contains(r.stderr, tt.wantStderr) || strings.Contains(r.stderr, "is required") {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
}

// TestRevokeWithoutSecret: revoke without JWKSVERIFY_ADMIN_SECRET (unset,
// or exported empty) and without a client certificate is a usage error
// that names the variable, and nothing is sent. It sent the call without
// credentials and printed the admin API's 401 "client authentication
// failed", exit 1, which does not say the variable was never exported.
func TestRevokeWithoutSecret(t *testing.T) {
	var calls atomic.Int32
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"invalid_client","message":"client authentication failed"}`+"\n")
	}))
	defer admin.Close()
	tests := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"unset-bearer", map[string]string{}, []string{"revoke", "list"}},
		{"unset-basic", map[string]string{}, []string{"revoke", "list", "--client", "ops"}},
		{"empty-bearer", map[string]string{"JWKSVERIFY_ADMIN_SECRET": ""}, []string{"revoke", "add", "--issuer", "https://i/", "--sub", "alice"}},
		{"empty-basic", map[string]string{"JWKSVERIFY_ADMIN_SECRET": ""}, []string{"revoke", "delete", "--client", "ops", "e1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls.Store(0)
			tt.env["JWKSVERIFY_ADMIN_URL"] = admin.URL
			r := runApp(t, tt.env, "", tt.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "JWKSVERIFY_ADMIN_SECRET is not set") || calls.Load() != 0 {
				t.Fatalf("exit %d, %d calls, stderr %q; want exit %d, no call, and the variable named", r.code, calls.Load(), r.stderr, exitUsage)
			}
		})
	}
}
