package service

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/revoke"
)

// TestLogoutAfterReloadTurningRevocationOn: the revocation store is opened
// at start only, so a reload that adds revocation and back-channel logout
// to a process started without them stores no logout (503, the IdP
// retries) and says why: revocation takes a restart — not "a
// configuration check", which is where else the unopened store is used.
func TestLogoutAfterReloadTurningRevocationOn(t *testing.T) {
	jwksSrv := jwksServer(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	doc := func(extra, bcl string) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
state_dir: %s
%sissuers:
  - issuer: https://idp.example/
    jwks_url: %s
%s`, filepath.Join(dir, "state"), extra, jwksSrv.URL, bcl)
	}
	l := startLive(t, writePlan(t, path, doc("", "")))
	ctx := t.Context()
	mustReload(t, l, ctx, writePlan(t, path, doc("revocation: {store: memory}\n", "    backchannel_logout: {audiences: [web-app]}\n")))
	now := time.Now()
	logout := testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a", "typ": "logout+jwt"},
		map[string]any{"iss": "https://idp.example/", "aud": "web-app", "sub": "alice", "iat": now.Unix(), "jti": "j1",
			"events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}}})
	r := l.Server().Signals()
	if r == nil {
		t.Fatal("no signals receiver after the reload")
	}
	_, err := r.Logout(ctx, logout, now)
	if !errors.Is(err, revoke.ErrUnavailable) || !strings.Contains(err.Error(), "restart") || strings.Contains(err.Error(), "configuration check") {
		t.Errorf("Logout() = %v, want unavailable, naming the restart revocation takes", err)
	}
}
