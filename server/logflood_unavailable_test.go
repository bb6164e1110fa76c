package server

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/signals"
)

// TestLogoutUnavailableLogBounded: POST /v1/logout/backchannel is
// unauthenticated, and a token naming a configured issuer whose keys are
// unusable (an IdP down past stale_for, an issuer not ready yet: any issuer,
// not only one taking logout tokens) is keys_unavailable before its
// signature is looked at. Each such request wrote one warn line "back-channel
// logout not stored" with no bound: anyone could write the log at their
// request rate while one issuer was down (refusals share
// log.rejections_per_second, this line did not).
func TestLogoutUnavailableLogBounded(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{})
	mem, err := replay.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(ve.Logs, nil))
	r, err := signals.New(signals.Options{
		Verifier: ve.V, Replay: mem, Store: &testAdder{}, Logger: log,
		Issuers: []signals.Issuer{{Issuer: issuerA, Logout: &signals.Logout{Audiences: []string{logoutClient}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Verifier: ve.V, Signals: r, Now: ve.Clock.Now, MaxBodyBytes: 16384, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	// Signed by nobody's key: only its iss names the issuer that is down.
	junk := logoutToken(map[string]any{"iss": issuerDown})
	const n = 500
	for i := 0; i < n; i++ {
		w := do(h, logoutRequest(url.Values{"logout_token": {junk}}.Encode()))
		if w.Code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503", w.Code)
		}
	}
	got := strings.Count(ve.Logs.String(), "back-channel logout not stored")
	t.Logf("%d unauthenticated logout tokens naming an issuer without keys -> %d warn lines", n, got)
	if got >= n {
		t.Errorf("unavailable logout tokens are logged without a rate limit: %d lines for %d requests", got, n)
	}
}
