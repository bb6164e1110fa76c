package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// The revocation signals through the real binary: a back-channel logout,
// a pushed SET and a polled SET each revoke what SPEC says, at once, and
// tokens issued afterwards survive.

const (
	bclEvent      = "http://schemas.openid.net/event/backchannel-logout"
	sessionRevoke = "https://schemas.openid.net/secevent/caep/event-type/session-revoked"
	credChange    = "https://schemas.openid.net/secevent/caep/event-type/credential-change"
	setAudience   = "https://api.e2e.example/"
)

// signalTransmitter is an RFC 8936 polling endpoint holding SETs until
// they are acknowledged.
type signalTransmitter struct {
	mu      sync.Mutex
	pending map[string]string
	acked   []string
	errs    map[string]any
}

func (tx *signalTransmitter) add(jti, set string) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.pending[jti] = set
}

func (tx *signalTransmitter) ackedJTIs() []string {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return append([]string(nil), tx.acked...)
}

func (tx *signalTransmitter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Ack     []string       `json:"ack"`
		SetErrs map[string]any `json:"setErrs"`
	}
	if r.Header.Get("Authorization") != "Bearer poll-secret" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	tx.mu.Lock()
	defer tx.mu.Unlock()
	for _, j := range req.Ack {
		delete(tx.pending, j)
		tx.acked = append(tx.acked, j)
	}
	for j, e := range req.SetErrs {
		delete(tx.pending, j)
		tx.errs[j] = e
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"sets": tx.pending, "moreAvailable": false})
}

func TestSignalsThroughTheBinary(t *testing.T) {
	is := newTestIssuer(t)
	dir := t.TempDir()
	pushFile := filepath.Join(dir, "push")
	pollFile := filepath.Join(dir, "poll")
	for f, v := range map[string]string{pushFile: "push-secret-0123456789abcdef\n", pollFile: "poll-secret\n"} {
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tx := &signalTransmitter{pending: map[string]string{}, errs: map[string]any{}}
	txSrv := httptest.NewServer(tx)
	t.Cleanup(txSrv.Close)
	j := startJWKSVerify(t, fmt.Sprintf(`listen: 127.0.0.1:0
state_dir: %s
revocation: {store: memory}
issuers:
%s    backchannel_logout: {audiences: [web-app], revoke: session}
    ssf:
      audiences: [%s]
      push: {bearer_token_file: %s}
      poll: {url: %q, bearer_token_file: %s, interval: 1s}
`, t.TempDir(), is.IssuerConfig(), setAudience, pushFile, txSrv.URL, pollFile))

	sign := func(typ string, c map[string]any) string {
		h := map[string]any{"kid": "rsa-a", "typ": typ}
		if typ == "" {
			h["typ"] = nil
		}
		return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), h, c)
	}
	before := time.Now().Add(-2 * time.Second).Unix()
	old := map[string]string{
		"sid-1":   is.Token(map[string]any{"sid": "sid-1", "sub": "ann", "iat": before}),
		"bob":     is.Token(map[string]any{"sub": "bob", "iat": before}),
		"carol":   is.Token(map[string]any{"sub": "carol", "iat": before}),
		"other":   is.Token(map[string]any{"sid": "sid-2", "sub": "dan", "iat": before}),
		"session": is.Token(map[string]any{"sid": "sid-3", "sub": "eve", "iat": before}),
	}
	for name, tok := range old {
		if code := authz(t, j, tok); code != http.StatusOK {
			t.Fatalf("%s before any signal: authz %d, want 200", name, code)
		}
	}
	now := time.Now().Unix()

	// Back-channel logout of session sid-1 (typ JWT, as Hydra sends).
	lt := sign("JWT", map[string]any{"iss": is.Issuer, "aud": "web-app", "iat": now, "jti": "lt-1", "sid": "sid-1",
		"events": map[string]any{bclEvent: map[string]any{}}})
	post := func(form string) (int, string) {
		resp, err := httpClient().Post("http://"+j.HTTP+"/v1/logout/backchannel", "application/x-www-form-urlencoded", strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Cache-Control") + " " + string(b)
	}
	if code, body := post(url.Values{"logout_token": {lt}}.Encode()); code != http.StatusOK || !strings.HasPrefix(body, "no-store") {
		t.Fatalf("logout = %d %q, want 200 no-store", code, body)
	}
	if code, _ := post(url.Values{"logout_token": {lt}}.Encode()); code != http.StatusBadRequest {
		t.Errorf("the same logout token again = %d, want 400 (jti used)", code)
	}
	// An access token is never a logout token.
	if code, _ := post(url.Values{"logout_token": {old["other"]}}.Encode()); code != http.StatusBadRequest {
		t.Errorf("an access token as logout token = %d, want 400", code)
	}

	// A pushed SET: credential-change of bob.
	push := func(set, bearer string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+j.HTTP+"/v1/ssf/events", strings.NewReader(set))
		req.Header.Set("Content-Type", "application/secevent+jwt")
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	set := sign("secevent+jwt", map[string]any{"iss": is.Issuer, "aud": setAudience, "iat": now, "jti": "set-push-1",
		"sub_id": map[string]any{"format": "iss_sub", "iss": is.Issuer, "sub": "bob"},
		"events": map[string]any{credChange: map[string]any{"event_timestamp": now}}})
	if code := push(set, "wrong-bearer-0123456789"); code != http.StatusUnauthorized {
		t.Errorf("push with a wrong bearer = %d, want 401", code)
	}
	if code := push(set, "push-secret-0123456789abcdef"); code != http.StatusAccepted {
		t.Fatalf("push = %d, want 202", code)
	}

	// Polled SETs: carol's credential change, and session sid-3 revoked.
	tx.add("set-poll-1", sign("secevent+jwt", map[string]any{"iss": is.Issuer, "aud": setAudience, "iat": now, "jti": "set-poll-1",
		"sub_id": map[string]any{"format": "opaque", "id": "carol"}, "events": map[string]any{credChange: map[string]any{}}}))
	tx.add("set-poll-2", sign("secevent+jwt", map[string]any{"iss": is.Issuer, "aud": setAudience, "iat": now, "jti": "set-poll-2",
		"sub_id": map[string]any{"format": "complex", "session": map[string]any{"format": "opaque", "id": "sid-3"}},
		"events": map[string]any{sessionRevoke: map[string]any{}}}))
	tx.add("set-poll-bad", sign("secevent+jwt", map[string]any{"iss": is.Issuer, "aud": "elsewhere", "iat": now, "jti": "set-poll-bad",
		"sub_id": map[string]any{"format": "opaque", "id": "dan"}, "events": map[string]any{credChange: map[string]any{}}}))
	waitFor(t, 15*time.Second, "the polled SETs acknowledged", func() bool { return len(tx.ackedJTIs()) == 2 })

	for name, want := range map[string]int{"sid-1": 401, "bob": 401, "carol": 401, "session": 401, "other": 200} {
		if code := authz(t, j, old[name]); code != want {
			t.Errorf("%s after the signals: authz %d, want %d", name, code, want)
		}
	}
	// Tokens issued after the events survive (a new login; iat has
	// one-second resolution: a token of a later second).
	for _, sub := range []string{"bob", "carol"} {
		if code := authz(t, j, is.Token(map[string]any{"sub": sub, "iat": now + 1})); code != http.StatusOK {
			t.Errorf("a new token of %s: authz %d, want 200", sub, code)
		}
	}
	tx.mu.Lock()
	bad := tx.errs["set-poll-bad"]
	tx.mu.Unlock()
	if e, _ := bad.(map[string]any); e["err"] != "invalid_audience" {
		t.Errorf("setErrs of the bad SET = %v, want invalid_audience", bad)
	}
	if !strings.Contains(j.Output(), `"msg":"back-channel logout applied"`) || strings.Contains(j.Output(), lt) {
		t.Error("the log lacks the logout line, or holds the logout token")
	}
}
