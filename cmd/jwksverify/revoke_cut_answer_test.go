package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRevokeCutAnswerIsNotDone: an answer whose body did not arrive whole
// (the connection cut, the 30s timeout reached while a long list was
// still coming) is a failure, never exit 0 with part of the JSON. The
// read error was dropped: `revoke list` printed the first part of the
// list, `revoke add` a piece of the entry, and exited 0.
func TestRevokeCutAnswerIsNotDone(t *testing.T) {
	const whole = `{"revocations":[{"id":"e1","issuer":"https://i/","kind":"sub","value":"alice"},{"id":"e2","issuer":"https://i/","kind":"sub","value":"bob"}]}` + "\n"
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		status := http.StatusOK
		if r.Method == http.MethodPost {
			status = http.StatusCreated
		}
		// Promise the whole answer, send a part, and drop the connection.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "130")
		w.WriteHeader(status)
		io.WriteString(w, whole[:60])
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer admin.Close()
	env := map[string]string{"JWKSVERIFY_ADMIN_URL": admin.URL, "JWKSVERIFY_ADMIN_SECRET": "s3cret-s3cret-s3cret"}
	for _, args := range [][]string{
		{"revoke", "list"},
		{"revoke", "add", "--issuer", "https://i/", "--sub", "alice"},
	} {
		t.Run(args[1], func(t *testing.T) {
			r := runApp(t, env, "", args...)
			if r.code == exitOK {
				t.Errorf("%v: exit 0 on an answer cut short; stdout %q", args, r.stdout)
			}
			if !strings.Contains(r.stderr, "revoke "+args[1]) {
				t.Errorf("stderr %q does not say what failed", r.stderr)
			}
		})
	}
}

// TestRevokeErrorBodyBounded: the body of a refusal is shown on stderr
// bounded (a proxy's 1 MiB HTML error page, a server that streams) and
// with its control characters escaped (a terminal's escape sequences),
// not up to 64 MiB as sent.
func TestRevokeErrorBodyBounded(t *testing.T) {
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "\x1b]0;owned\x07"+strings.Repeat("<p>error</p>", 1<<17))
	}))
	defer admin.Close()
	r := runApp(t, map[string]string{"JWKSVERIFY_ADMIN_URL": admin.URL, "JWKSVERIFY_ADMIN_SECRET": "s3cret-s3cret-s3cret"}, "", "revoke", "list")
	if r.code != exitFailure {
		t.Errorf("exit %d, want %d", r.code, exitFailure)
	}
	if len(r.stderr) > 8<<10 {
		t.Errorf("stderr holds %d bytes of the answer, want at most 8 KiB", len(r.stderr))
	}
	if strings.ContainsAny(r.stderr, "\x1b\x07") {
		t.Errorf("stderr repeats the answer's control characters")
	}
	if !strings.Contains(r.stderr, "400 Bad Request") {
		t.Errorf("stderr does not name the status: %.200q", r.stderr)
	}
}
