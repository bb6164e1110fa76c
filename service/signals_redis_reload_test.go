package service

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/signals"
)

// TestReloadDroppingDPoPKeepsSignalStoreOpen: with DPoP on Redis, the
// logout tokens' jtis go to the DPoP replay store. A reload that turns
// DPoP off and changes the redis section (a new client; the old one is
// retired and closed after the grace) must give the receiver a store over
// the client in use: it kept the DPoP store over the retired client, and
// every back-channel logout was refused (503) from then on — the IdP's
// logouts never revoked anything.
func TestReloadDroppingDPoPKeepsSignalStoreOpen(t *testing.T) {
	port := redistest.Start(t).Port
	jwksSrv := jwksServer(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	load := func(timeout, dpopDoc, constraint string) *config.Plan {
		t.Helper()
		p := writePlan(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
state_dir: %s
revocation: {store: memory}
redis: {url: "redis://127.0.0.1:%d", timeout: %s}
%s
issuers:
  - issuer: https://idp.example/
    jwks_url: %s
    sender_constraint: {dpop: %s}
    backchannel_logout: {audiences: [web-app]}
`, filepath.Join(dir, "state"), port, timeout, dpopDoc, jwksSrv.URL, constraint))
		p.HTTP.Write = 50 * time.Millisecond // the retirement grace: short for the test
		return p
	}
	l := startLive(t, load("500ms", "dpop: {replay_store: redis}", "optional"))
	ctx := context.Background()
	if err := l.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	logout := func(jti string) int {
		tok := testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a", "typ": "logout+jwt"},
			map[string]any{"iss": "https://idp.example/", "aud": "web-app", "iat": time.Now().Unix(), "jti": jti, "sid": "s-" + jti,
				"events": map[string]any{signals.BackchannelLogoutEvent: map[string]any{}}})
		r := httptest.NewRequest(http.MethodPost, "/v1/logout/backchannel", strings.NewReader(url.Values{"logout_token": {tok}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		l.Handler().ServeHTTP(w, r)
		return w.Code
	}
	if code := logout("before"); code != http.StatusOK {
		t.Fatalf("logout before the reload: %d, want 200", code)
	}
	// The retired client is also under the replay store the reload
	// retired: its hold ends at once here (else ~12 minutes).
	ended := make(chan time.Time)
	close(ended)
	l.holdEnd = func(time.Duration) <-chan time.Time { return ended }
	mustReload(t, l, ctx, load("600ms", "", "off"))
	l.retired.Wait() // the retired client is closed (a sleep could end first: then nothing was tested)
	if code := logout("after"); code != http.StatusOK {
		t.Errorf("logout after the reload: %d, want 200", code)
	}
}
