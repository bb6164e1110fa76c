package server

import (
	"log/slog"

	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/signals"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestLogoutRefusalLogBounded: POST /v1/logout/backchannel is
// unauthenticated (BCL), and every refused logout token wrote one "back-channel
// logout token refused" line with no bound, unlike "token rejected": they
// now share log.rejections_per_second.
func TestLogoutRefusalLogBounded(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{})
	mem, err := replay.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := signals.New(signals.Options{
		Verifier: ve.V, Replay: mem, Store: &testAdder{}, Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil)),
		Issuers: []signals.Issuer{{Issuer: issuerA, Logout: &signals.Logout{Audiences: []string{logoutClient}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Verifier: ve.V, Signals: r, Now: ve.Clock.Now, MaxBodyBytes: 16384,
		Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	const n = 500
	for i := 0; i < n; i++ {
		body := url.Values{"logout_token": {"x.y.z"}}.Encode()
		w := do(h, logoutRequest(body))
		if w.Code != http.StatusBadRequest {
			t.Fatalf("status %d", w.Code)
		}
	}
	got := strings.Count(ve.Logs.String(), "back-channel logout token refused")
	t.Logf("%d unauthenticated garbage logout tokens -> %d log lines", n, got)
	if got >= n {
		t.Errorf("refused logout tokens are logged without a rate limit: %d lines for %d requests", got, n)
	}
}

// TestRejectionFloodKeepsWarnLines: one limiter served every rejection
// class and level, so a flood of malformed tokens (info) dropped the warn
// line of a keys_unavailable rejection (its issuer, kid, detail), leaving
// only a count. Warn and error lines have their own allowance now.
func TestRejectionFloodKeepsWarnLines(t *testing.T) {
	e := newEnv(t, envConfig{emptyKeys: true})
	for i := 0; i < 25; i++ {
		do(e.handler, authzRequest(http.MethodGet, "/v1/authz", "garbage.garbage.garbage"))
	}
	e.logs.Reset()
	w := do(e.handler, authzRequest(http.MethodGet, "/v1/authz", tokens()["valid"]))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503 keys_unavailable", w.Code)
	}
	if !strings.Contains(e.logs.String(), `"class":"keys_unavailable"`) {
		t.Errorf("after 25 malformed tokens, the keys_unavailable rejection left no line: %q", e.logs.String())
	}
}
