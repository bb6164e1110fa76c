package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/signals"
)

const (
	logoutClient = "web-app"
	setAudience  = "https://api.example.com/"
	pushBearer   = "push-bearer-0123456789abcdef"
)

// testAdder is a revoke.Adder that records entries, and fails while down.
type testAdder struct {
	mu      sync.Mutex
	entries []revoke.Entry
	down    bool
}

func (a *testAdder) Add(_ context.Context, e revoke.Entry) (revoke.Entry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.down {
		return revoke.Entry{}, fmt.Errorf("%w: down", revoke.ErrUnavailable)
	}
	e.ID = fmt.Sprint(len(a.entries) + 1)
	a.entries = append(a.entries, e)
	return e, nil
}

func (a *testAdder) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.entries)
}

// signalEnv is a server whose receiver takes issuerA's logout tokens and
// pushed SETs.
type signalEnv struct {
	srv   *Server
	store *testAdder
}

func newSignalEnv(t testing.TB) *signalEnv {
	t.Helper()
	ve := servertest.NewEnv(t, servertest.Config{})
	mem, err := replay.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	se := &signalEnv{store: &testAdder{}}
	r, err := signals.New(signals.Options{
		Verifier: ve.V, Replay: mem, Store: se.store, Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil)),
		Issuers: []signals.Issuer{{Issuer: issuerA,
			Logout: &signals.Logout{Audiences: []string{logoutClient}},
			SSF:    &signals.SSF{Audiences: []string{setAudience}, PushBearer: pushBearer}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	se.srv, err = New(Options{Verifier: ve.V, Signals: r, Now: ve.Clock.Now, MaxBodyBytes: 16384,
		Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return se
}

func logoutToken(over map[string]any) string {
	c := map[string]any{"iss": issuerA, "aud": logoutClient, "iat": epoch.Unix(), "jti": "lt-1", "sid": "s-1",
		"events": map[string]any{signals.BackchannelLogoutEvent: map[string]any{}}}
	for k, v := range over {
		c[k] = v
	}
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a", "typ": "logout+jwt"}, c)
}

func setToken(over map[string]any) string {
	c := map[string]any{"iss": issuerA, "aud": setAudience, "iat": epoch.Unix(), "jti": "set-1",
		"sub_id": map[string]any{"format": "iss_sub", "iss": issuerA, "sub": "alice"},
		"events": map[string]any{signals.EventCredentialChange: map[string]any{}}}
	for k, v := range over {
		c[k] = v
	}
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a", "typ": "secevent+jwt"}, c)
}

func logoutRequest(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, logoutPath, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

func TestServeLogout(t *testing.T) {
	form := func(tok string) string { return url.Values{"logout_token": {tok}}.Encode() }
	tests := []struct {
		name      string
		req       func() *http.Request
		storeDown bool
		status    int
		stored    int
	}{
		{"valid", func() *http.Request { return logoutRequest(form(logoutToken(nil))) }, false, 200, 1},
		{"invalid-token", func() *http.Request { return logoutRequest(form(logoutToken(map[string]any{"aud": "other"}))) }, false, 400, 0},
		{"access-token-is-no-logout-token", func() *http.Request { return logoutRequest(form(mint(claims(nil)))) }, false, 400, 0},
		{"no-token", func() *http.Request { return logoutRequest("x=1") }, false, 400, 0},
		{"two-tokens", func() *http.Request {
			return logoutRequest(url.Values{"logout_token": {logoutToken(nil), logoutToken(nil)}}.Encode())
		}, false, 400, 0},
		{"not-a-form", func() *http.Request {
			r := logoutRequest(form(logoutToken(nil)))
			r.Header.Set("Content-Type", "application/json")
			return r
		}, false, 400, 0},
		{"token-in-query-only", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, logoutPath+"?"+form(logoutToken(nil)), strings.NewReader(""))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, false, 400, 0},
		{"body-too-large", func() *http.Request {
			return logoutRequest(form(logoutToken(nil)) + "&pad=" + strings.Repeat("x", 17000))
		}, false, 400, 0},
		{"store-down", func() *http.Request { return logoutRequest(form(logoutToken(nil))) }, true, 503, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			se := newSignalEnv(t)
			se.store.down = tt.storeDown
			w := do(se.srv.Handler(), tt.req())
			if w.Code != tt.status || se.store.count() != tt.stored {
				t.Fatalf("POST %s = %d (%s), stored %d; want %d, %d", logoutPath, w.Code, w.Body, se.store.count(), tt.status, tt.stored)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", got)
			}
			if tt.status == 200 {
				return
			}
			var body map[string]string
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body["error_description"] == "" {
				t.Fatalf("body %s, want error and error_description", w.Body)
			}
			want := "invalid_request"
			if tt.status == 503 {
				want = "temporarily_unavailable"
			}
			if body["error"] != want || strings.Contains(w.Body.String(), "eyJ") {
				t.Errorf("body %s, want error %s and no token echoed", w.Body, want)
			}
		})
	}
}

func pushRequest(tok, bearer, contentType string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, ssfPath, strings.NewReader(tok))
	r.Header.Set("Content-Type", contentType)
	if bearer != "" {
		r.Header.Set("Authorization", bearer)
	}
	return r
}

func TestServeSSFEvents(t *testing.T) {
	const ct = "application/secevent+jwt"
	tests := []struct {
		name      string
		req       *http.Request
		storeDown bool
		status    int
		code      string
		stored    int
	}{
		{"valid", pushRequest(setToken(nil), "Bearer "+pushBearer, ct), false, 202, "", 1},
		{"bearer-scheme-case", pushRequest(setToken(nil), "bearer "+pushBearer, ct), false, 202, "", 1},
		{"no-bearer", pushRequest(setToken(nil), "", ct), false, 401, "authentication_failed", 0},
		{"wrong-bearer", pushRequest(setToken(nil), "Bearer "+pushBearer+"x", ct), false, 401, "authentication_failed", 0},
		{"basic-scheme", pushRequest(setToken(nil), "Basic "+pushBearer, ct), false, 401, "authentication_failed", 0},
		{"wrong-content-type", pushRequest(setToken(nil), "Bearer "+pushBearer, "application/jwt"), false, 400, "invalid_request", 0},
		{"wrong-audience", pushRequest(setToken(map[string]any{"aud": "x"}), "Bearer "+pushBearer, ct), false, 400, "invalid_audience", 0},
		{"wrong-key", pushRequest(testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048B), map[string]any{"kid": "rsa-a", "typ": "secevent+jwt"},
			map[string]any{"iss": issuerA}), "Bearer "+pushBearer, ct), false, 400, "invalid_key", 0},
		{"another-issuer", pushRequest(setToken(map[string]any{"iss": issuerDown}), "Bearer "+pushBearer, ct), false, 400, "invalid_issuer", 0},
		{"no-events", pushRequest(setToken(map[string]any{"events": map[string]any{}}), "Bearer "+pushBearer, ct), false, 400, "invalid_request", 0},
		{"too-large", pushRequest(strings.Repeat("a", 17000), "Bearer "+pushBearer, ct), false, 400, "invalid_request", 0},
		{"store-down", pushRequest(setToken(nil), "Bearer "+pushBearer, ct), true, 503, "temporarily_unavailable", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			se := newSignalEnv(t)
			se.store.down = tt.storeDown
			w := do(se.srv.Handler(), tt.req)
			if w.Code != tt.status || se.store.count() != tt.stored {
				t.Fatalf("POST %s = %d (%s), stored %d; want %d, %d", ssfPath, w.Code, w.Body, se.store.count(), tt.status, tt.stored)
			}
			if tt.status == 202 {
				if w.Body.Len() != 0 {
					t.Errorf("202 body %q, want empty", w.Body)
				}
				return
			}
			var body map[string]string
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body["err"] != tt.code || body["description"] == "" {
				t.Errorf("body %s, want err %s and a description", w.Body, tt.code)
			}
			if tt.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

// TestSignalRoutes: the endpoints are served when configured (documented in
// docs/API.md, on the main listener, POST only), and 404 otherwise.
func TestSignalRoutes(t *testing.T) {
	se := newSignalEnv(t)
	hs := headings(readAPIDoc(t))
	for _, p := range []string{logoutPath, ssfPath} {
		if !strings.Contains(strings.Join(hs, "\n"), "`"+p+"`") {
			t.Errorf("docs/API.md has no ### heading naming `%s`", p)
		}
		if w := get(se.srv.Handler(), p); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodPost {
			t.Errorf("GET %s = %d, Allow %q; want 405, POST", p, w.Code, w.Header().Get("Allow"))
		}
		if w := do(se.srv.AdminHandler(), postJSON(p, "")); w.Code != http.StatusNotFound {
			t.Errorf("admin POST %s = %d, want 404", p, w.Code)
		}
		if w := do(newEnv(t, envConfig{}).handler, postJSON(p, "")); w.Code != http.StatusNotFound {
			t.Errorf("POST %s without a receiver = %d, want 404", p, w.Code)
		}
	}
}
