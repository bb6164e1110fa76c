package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// idBody is a /v1/verify body asking for an ID token with the given extra
// members (JSON text, without braces).
func idBody(token, extra string) string {
	b := `{"token":` + jsonString(token) + `,"kind":"id_token"`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// TestVerifyIDToken: /v1/verify with "kind": "id_token" and its inputs.
func TestVerifyIDToken(t *testing.T) {
	e := newEnv(t, envConfig{tokenCache: 64})
	good := servertest.IDToken(nil, nil)
	inputs := `"nonce":"` + servertest.Nonce + `","access_token":"` + servertest.AccessToken + `","code":"` + servertest.Code +
		`","max_age":300,"acr_values":["gold","silver"]`
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantValid  bool
		wantError  string
	}{
		{"id-token-all-inputs", idBody(good, inputs), 200, true, ""},
		{"id-token-no-inputs", idBody(good, ""), 200, true, ""},
		{"id-token-wrong-nonce", idBody(good, `"nonce":"other"`), 200, false, "wrong_nonce"},
		{"id-token-wrong-access-token", idBody(good, `"access_token":"other"`), 200, false, "wrong_hash"},
		{"id-token-wrong-code", idBody(good, `"code":"other"`), 200, false, "wrong_hash"},
		{"id-token-auth-too-old", idBody(good, `"max_age":10`), 200, false, "auth_too_old"},
		{"id-token-wrong-acr", idBody(good, `"acr_values":["gold"]`), 200, false, "wrong_acr"},
		{"id-token-no-nonce-claim", idBody(servertest.IDToken(nil, map[string]any{"nonce": nil}), `"nonce":"x"`), 200, false, "missing_claim"},
		{"id-token-wrong-azp", idBody(servertest.IDToken(nil, map[string]any{"azp": "android"}), ""), 200, false, "wrong_azp"},
		{"id-token-iat-ahead", idBody(servertest.IDToken(nil, map[string]any{"iat": servertest.Epoch.Unix() + 3600}), ""), 200, false, "not_yet_valid"},
		{"id-token-as-access-token", `{"token":` + jsonString(good) + `}`, 200, false, "wrong_audience"},
		{"access-token-as-id-token", idBody(servertest.Mint(servertest.Claims(nil)), ""), 200, false, "wrong_audience"},
		{"id-token-of-issuer-without-id-token", idBody(servertest.IDToken(nil, map[string]any{"iss": servertest.IssuerDown}), ""), 200, false, "wrong_type"},
		{"kind-access-token", `{"token":` + jsonString(servertest.Mint(servertest.Claims(nil))) + `,"kind":"access_token"}`, 200, true, ""},
		{"unknown-kind", `{"token":"a","kind":"logout_token"}`, 400, false, "bad_request"},
		{"kind-not-string", `{"token":"a","kind":1}`, 400, false, "bad_request"},
		{"nonce-without-kind", `{"token":"a","nonce":"n"}`, 400, false, "bad_request"},
		{"empty-nonce", idBody("a", `"nonce":""`), 400, false, "bad_request"},
		{"negative-max-age", idBody("a", `"max_age":-1`), 400, false, "bad_request"},
		{"max-age-not-integer", idBody("a", `"max_age":1.5`), 400, false, "bad_request"},
		{"acr-values-not-array", idBody("a", `"acr_values":"gold"`), 400, false, "bad_request"},
		{"id-token-with-dpop", idBody(good, `"dpop":"x"`), 400, false, "bad_request"},
		{"id-token-with-client-cert", idBody(good, `"client_cert":"MIIB"`), 400, false, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second answer may come from the token cache
				w := do(e.handler, postJSON("/v1/verify", tt.body))
				if w.Code != tt.wantStatus {
					t.Fatalf("status = %d, want %d (body %s)", w.Code, tt.wantStatus, w.Body)
				}
				var got struct {
					Valid bool   `json:"valid"`
					Error string `json:"error"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
					t.Fatalf("body %q: %v", w.Body, err)
				}
				if got.Valid != tt.wantValid || got.Error != tt.wantError {
					t.Fatalf("body = %s, want valid=%v error=%q", w.Body, tt.wantValid, tt.wantError)
				}
				for _, secret := range []string{servertest.Nonce, servertest.AccessToken, servertest.Code} {
					if !tt.wantValid && strings.Contains(w.Body.String(), secret) {
						t.Fatalf("body %s echoes an input", w.Body)
					}
				}
			}
		})
	}
}

// TestTokenKindsEverywhere: a token of another kind is wrong_type through
// /v1/verify (as an access and as an ID token), forward-auth and
// Middleware, and inactive at /introspect; an access token (typ at+jwt) is
// wrong_type as an ID token.
func TestTokenKindsEverywhere(t *testing.T) {
	e := newEnv(t, envConfig{tokenCache: 64})
	protect, err := Middleware(e.v, MiddlewareOptions{Logger: e.srv.log})
	if err != nil {
		t.Fatalf("Middleware() = %v", err)
	}
	mw := protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for name, tok := range servertest.KindTokens() {
		t.Run(name, func(t *testing.T) {
			for range 2 {
				for _, body := range []string{`{"token":` + jsonString(tok) + `}`, idBody(tok, "")} {
					w := do(e.handler, postJSON("/v1/verify", body))
					if !strings.Contains(w.Body.String(), `"error":"wrong_type"`) {
						t.Fatalf("/v1/verify %s = %d %s, want wrong_type", body[len(body)-20:], w.Code, w.Body)
					}
				}
				if w := do(e.handler, authzRequest(http.MethodGet, authzPath, tok)); w.Code != http.StatusUnauthorized ||
					!strings.Contains(w.Header().Get("WWW-Authenticate"), `error_description="wrong_type"`) {
					t.Fatalf("forward-auth = %d %q, want 401 wrong_type", w.Code, w.Header().Get("WWW-Authenticate"))
				}
				if w := do(e.handler, introspectRequest("token="+url.QueryEscape(tok), "gateway", "gateway-secret-value")); w.Code != http.StatusOK ||
					strings.TrimSpace(w.Body.String()) != `{"active":false}` {
					t.Fatalf("/introspect = %d %s, want {\"active\":false}", w.Code, w.Body)
				}
				if w := do(mw, authzRequest(http.MethodGet, "/orders", tok)); w.Code != http.StatusUnauthorized ||
					!strings.Contains(w.Header().Get("WWW-Authenticate"), `error_description="wrong_type"`) {
					t.Fatalf("Middleware = %d %q, want 401 wrong_type", w.Code, w.Header().Get("WWW-Authenticate"))
				}
			}
		})
	}
	t.Run("at-jwt-as-id-token", func(t *testing.T) {
		w := do(e.handler, postJSON("/v1/verify", idBody(servertest.IDToken(map[string]any{"typ": "at+jwt"}, nil), "")))
		if !strings.Contains(w.Body.String(), `"error":"wrong_type"`) {
			t.Fatalf("/v1/verify = %d %s, want wrong_type", w.Code, w.Body)
		}
	})
}
