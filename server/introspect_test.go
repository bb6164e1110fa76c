package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// introspectRequest builds a form POST to /introspect with Basic
// credentials (none when id is "").
func introspectRequest(form, id, secret string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/introspect", strings.NewReader(form))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		r.SetBasicAuth(id, secret)
	}
	return r
}

func TestIntrospect(t *testing.T) {
	e := newEnv(t, envConfig{})
	toks := tokens()
	tests := []struct {
		name       string
		token      string
		wantStatus int
		wantBody   string // exact, when set
	}{
		{name: "valid", token: toks["valid"], wantStatus: http.StatusOK},
		{name: "expired", token: toks["expired"], wantStatus: http.StatusOK, wantBody: `{"active":false}` + "\n"},
		{name: "wrong-audience", token: toks["wrong-audience"], wantStatus: http.StatusOK, wantBody: `{"active":false}` + "\n"},
		{name: "bad-signature", token: toks["bad-signature"], wantStatus: http.StatusOK, wantBody: `{"active":false}` + "\n"},
		{name: "unknown-kid", token: toks["unknown-kid"], wantStatus: http.StatusOK, wantBody: `{"active":false}` + "\n"},
		{name: "unknown-issuer", token: toks["unknown-issuer"], wantStatus: http.StatusOK, wantBody: `{"active":false}` + "\n"},
		{name: "garbage", token: "garbage", wantStatus: http.StatusOK, wantBody: `{"active":false}` + "\n"},
		{name: "keys-unavailable", token: toks["keys-unavailable"], wantStatus: http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form := url.Values{"token": {tt.token}, "token_type_hint": {"access_token"}}.Encode()
			w := do(e.handler, introspectRequest(form, "gateway", "gateway-secret-value"))
			if w.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantBody != "" && w.Body.String() != tt.wantBody {
				t.Errorf("body = %q, want exactly %q", w.Body, tt.wantBody)
			}
			if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", cc)
			}
			if strings.Contains(w.Body.String(), tt.token) {
				t.Errorf("response echoes the token")
			}
			checkGolden(t, "introspect-"+tt.name, w)
		})
	}
}

func TestIntrospectActiveBody(t *testing.T) {
	e := newEnv(t, envConfig{})
	tests := []struct {
		name          string
		over          map[string]any
		wantTokenType string
	}{
		{name: "default-token-type", wantTokenType: "Bearer"},
		{name: "token-type-from-claims", over: map[string]any{"token_type": "DPoP"}, wantTokenType: "DPoP"},
		{name: "active-claim-cannot-override", over: map[string]any{"active": false}, wantTokenType: "Bearer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(e.handler, introspectRequest("token="+mint(claims(tt.over)), "gateway", "gateway-secret-value"))
			var got map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got["active"] != true || got["token_type"] != tt.wantTokenType || got["sub"] != "alice" || got["iss"] != issuerA {
				t.Errorf("body = %s, want active true, token_type %q, sub and iss", w.Body, tt.wantTokenType)
			}
			if n := strings.Count(w.Body.String(), `"active"`); n != 1 {
				t.Errorf("body has %d active members, want 1", n)
			}
		})
	}
}

func TestIntrospectClientAuth(t *testing.T) {
	e := newEnv(t, envConfig{})
	form := "token=" + tokens()["valid"]
	withAuth := func(v string) *http.Request {
		r := introspectRequest(form, "", "")
		r.Header.Set("Authorization", v)
		return r
	}
	twoAuth := introspectRequest(form, "gateway", "gateway-secret-value")
	twoAuth.Header.Add("Authorization", "Bearer gateway-secret-value")
	tests := []struct {
		name       string
		req        *http.Request
		wantStatus int
	}{
		{name: "basic", req: introspectRequest(form, "gateway", "gateway-secret-value"), wantStatus: http.StatusOK},
		{name: "basic-second-client", req: introspectRequest(form, "other", "other-secret-value"), wantStatus: http.StatusOK},
		{name: "basic-form-encoded", req: introspectRequest(form, "gateway", "gateway%2Dsecret%2Dvalue"), wantStatus: http.StatusOK},
		{name: "bearer-secret", req: withAuth("Bearer gateway-secret-value"), wantStatus: http.StatusOK},
		{name: "bearer-lowercase-scheme", req: withAuth("bearer other-secret-value"), wantStatus: http.StatusOK},
		{name: "no-credentials", req: introspectRequest(form, "", ""), wantStatus: http.StatusUnauthorized},
		{name: "wrong-secret", req: introspectRequest(form, "gateway", "nope"), wantStatus: http.StatusUnauthorized},
		{name: "secret-of-other-client", req: introspectRequest(form, "gateway", "other-secret-value"), wantStatus: http.StatusUnauthorized},
		{name: "unknown-client", req: introspectRequest(form, "stranger", "gateway-secret-value"), wantStatus: http.StatusUnauthorized},
		{name: "empty-secret", req: introspectRequest(form, "gateway", ""), wantStatus: http.StatusUnauthorized},
		{name: "bearer-wrong", req: withAuth("Bearer gateway"), wantStatus: http.StatusUnauthorized},
		{name: "bearer-empty", req: withAuth("Bearer "), wantStatus: http.StatusUnauthorized},
		{name: "other-scheme", req: withAuth("Digest gateway-secret-value"), wantStatus: http.StatusUnauthorized},
		{name: "two-authorization-headers", req: twoAuth, wantStatus: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(e.handler, tt.req)
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantStatus == http.StatusUnauthorized {
				if got := w.Header().Get("WWW-Authenticate"); got != `Basic realm="jwksverify"` {
					t.Errorf("WWW-Authenticate = %q, want Basic realm", got)
				}
				if strings.Contains(w.Body.String(), "active") {
					t.Errorf("unauthenticated caller got a verdict: %s", w.Body)
				}
			}
		})
	}
	checkGolden(t, "introspect-no-credentials", do(e.handler, introspectRequest(form, "", "")))
}

func TestIntrospectNoClientsConfigured(t *testing.T) {
	e := newEnv(t, envConfig{})
	srv, err := New(Options{Verifier: e.v})
	if err != nil {
		t.Fatal(err)
	}
	w := do(srv.Handler(), introspectRequest("token="+tokens()["valid"], "gateway", "gateway-secret-value"))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("status = %d, want 401", w.Code)
	}
}

func TestIntrospectBadRequests(t *testing.T) {
	e := newEnv(t, envConfig{})
	tok := tokens()["valid"]
	jsonReq := introspectRequest(`{"token":"x"}`, "gateway", "gateway-secret-value")
	jsonReq.Header.Set("Content-Type", "application/json")
	queryOnly := introspectRequest("", "gateway", "gateway-secret-value")
	queryOnly.URL.RawQuery = "token=" + tok
	tests := []struct {
		name       string
		req        *http.Request
		wantStatus int
	}{
		{name: "missing-token", req: introspectRequest("token_type_hint=access_token", "gateway", "gateway-secret-value"), wantStatus: http.StatusBadRequest},
		{name: "empty-token", req: introspectRequest("token=", "gateway", "gateway-secret-value"), wantStatus: http.StatusBadRequest},
		{name: "token-twice", req: introspectRequest("token="+tok+"&token="+tok, "gateway", "gateway-secret-value"), wantStatus: http.StatusBadRequest},
		{name: "not-a-form", req: jsonReq, wantStatus: http.StatusBadRequest},
		{name: "token-in-query-only", req: queryOnly, wantStatus: http.StatusBadRequest},
		{name: "bad-escape", req: introspectRequest("token=%zz", "gateway", "gateway-secret-value"), wantStatus: http.StatusBadRequest},
		{name: "body-too-large", req: introspectRequest("token="+strings.Repeat("a", 70000), "gateway", "gateway-secret-value"), wantStatus: http.StatusRequestEntityTooLarge},
		{name: "token-too-large", req: introspectRequest("token="+strings.Repeat("a", 20000), "gateway", "gateway-secret-value"), wantStatus: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(e.handler, tt.req)
			if w.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", w.Code, tt.wantStatus, w.Body)
			}
			if w.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", w.Header().Get("Cache-Control"))
			}
			checkGolden(t, "introspect-"+tt.name, w)
		})
	}
}

// TestIntrospectClientAuthFailures: each refused client is counted by
// reason and logged with the client id when it is a configured one, never
// with a secret nor an unknown id.
func TestIntrospectClientAuthFailures(t *testing.T) {
	e := newEnv(t, envConfig{})
	form := url.Values{"token": {tokens()["valid"]}}.Encode()
	tests := []struct {
		name       string
		req        func() *http.Request
		wantReason string
		wantID     string
		secret     string // must not appear in the log
	}{
		{name: "no-credentials", req: func() *http.Request { return introspectRequest(form, "", "") }, wantReason: ClientAuthMissing},
		{name: "wrong-secret", req: func() *http.Request { return introspectRequest(form, "gateway", "guessed-secret-1") }, wantReason: ClientAuthWrongSecret, wantID: "gateway", secret: "guessed-secret-1"},
		{name: "unknown-client", req: func() *http.Request { return introspectRequest(form, "gateway-secret-value", "x") }, wantReason: ClientAuthUnknownClient, secret: "gateway-secret-value"},
		{name: "bearer", req: func() *http.Request {
			r := introspectRequest(form, "", "")
			r.Header.Set("Authorization", "Bearer guessed-secret-2")
			return r
		}, wantReason: ClientAuthBearer, secret: "guessed-secret-2"},
		{name: "other-scheme", req: func() *http.Request {
			r := introspectRequest(form, "", "")
			r.Header.Set("Authorization", "Digest abc")
			return r
		}, wantReason: ClientAuthMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.logs.Reset()
			before := e.metrics.count("client_auth", tt.wantReason, "")
			w := do(e.handler, tt.req())
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401", w.Code)
			}
			if got := e.metrics.count("client_auth", tt.wantReason, ""); got != before+1 {
				t.Errorf("ClientAuthFailed(%s) recorded %d times, want 1", tt.wantReason, got-before)
			}
			var line map[string]any
			for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "introspection client authentication failed" {
					line = m
				}
			}
			if line == nil {
				t.Fatalf("no \"introspection client authentication failed\" line in %q", e.logs.String())
			}
			if line["reason"] != tt.wantReason || line["client_id"] != tt.wantID || line["level"] != "WARN" {
				t.Errorf("log line %v, want reason %s client_id %q at WARN", line, tt.wantReason, tt.wantID)
			}
			if tt.secret != "" && strings.Contains(e.logs.String(), tt.secret) {
				t.Errorf("the log carries the credential %q: %s", tt.secret, e.logs.String())
			}
		})
	}
}
