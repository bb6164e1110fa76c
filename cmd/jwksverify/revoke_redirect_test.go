package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestRevokeFollowsNoRedirect: jwksverify revoke answers a redirect as a
// failure and never follows it. Followed, a 301/302/303 turned `revoke add`
// into a GET of the list (a proxy in front of admin_listen that sends
// http:// to https:// answers 301): the list came back 200 and the command
// exited 0, printing it, while no entry was stored. And the Authorization
// header (the admin secret) went along to whatever the Location named on
// the same host name, whatever its port and scheme (Go's client keeps it
// for the same host name): https://admin:9443 redirected to
// http://admin:80 sent the secret in clear.
func TestRevokeFollowsNoRedirect(t *testing.T) {
	var mu sync.Mutex
	var seen []string // method path authorization, per request at the target
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"revocations":[]}`+"\n")
	}))
	defer target.Close()
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+r.URL.Path, status)
			}))
			defer admin.Close()
			env := map[string]string{"JWKSVERIFY_ADMIN_URL": admin.URL, "JWKSVERIFY_ADMIN_SECRET": "s3cret-s3cret-s3cret"}
			r := runApp(t, env, "", "revoke", "add", "--issuer", "https://i/", "--sub", "alice")
			if r.code == exitOK {
				t.Errorf("revoke add redirected with %d: exit 0 (stdout %q), but nothing was stored", status, r.stdout)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range seen {
				if strings.Contains(s, "s3cret") {
					t.Errorf("the redirect target (another listener) got the admin secret: %q", s)
				}
			}
			if len(seen) != 0 {
				t.Errorf("the redirect was followed: %q", seen)
			}
		})
	}
}
