package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestIDTokenRefusedWithoutAudiences: with an issuer configured as SPEC's
// id_token example is (client_ids, no audiences), an ID token of it was an
// access token everywhere one is asked for: forward-auth 200, /introspect
// active, /v1/verify and batches valid, Middleware through. SPEC: those
// front ends "only accept access tokens". The same ID token still verifies
// with "kind": "id_token"; an access token of the issuer still passes.
func TestIDTokenRefusedWithoutAudiences(t *testing.T) {
	e := newEnv(t, envConfig{tokenCache: 64, noAudiences: true})
	protect, err := Middleware(e.v, MiddlewareOptions{Logger: e.srv.log})
	if err != nil {
		t.Fatalf("Middleware() = %v", err)
	}
	mw := protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	id := servertest.IDToken(nil, nil)
	access := servertest.Mint(servertest.Claims(nil))
	for range 2 { // the second may be a cache hit
		if w := do(e.handler, postJSON("/v1/verify", idBody(id, ""))); !strings.Contains(w.Body.String(), `"valid":true`) {
			t.Fatalf(`/v1/verify "kind":"id_token" = %d %s, want valid`, w.Code, w.Body)
		}
		if w := do(e.handler, authzRequest(http.MethodGet, authzPath, access)); w.Code != http.StatusOK {
			t.Fatalf("forward-auth with an access token = %d, want 200", w.Code)
		}
		if w := do(e.handler, postJSON("/v1/verify", `{"token":`+jsonString(id)+`}`)); !strings.Contains(w.Body.String(), `"error":"wrong_type"`) {
			t.Errorf("/v1/verify (access token) with an ID token = %d %s, want wrong_type", w.Code, w.Body)
		}
		if w := do(e.handler, postJSON("/v1/verify/batch", `{"tokens":[`+jsonString(id)+`]}`)); !strings.Contains(w.Body.String(), `"error":"wrong_type"`) {
			t.Errorf("/v1/verify/batch with an ID token = %d %s, want wrong_type", w.Code, w.Body)
		}
		if w := do(e.handler, authzRequest(http.MethodGet, authzPath, id)); w.Code != http.StatusUnauthorized ||
			!strings.Contains(w.Header().Get("WWW-Authenticate"), `error_description="wrong_type"`) {
			t.Errorf("forward-auth with an ID token = %d %q, want 401 wrong_type", w.Code, w.Header().Get("WWW-Authenticate"))
		}
		if w := do(e.handler, introspectRequest("token="+url.QueryEscape(id), "gateway", "gateway-secret-value")); strings.TrimSpace(w.Body.String()) != `{"active":false}` {
			t.Errorf("/introspect with an ID token = %d %s, want {\"active\":false}", w.Code, w.Body)
		}
		if w := do(mw, authzRequest(http.MethodGet, "/orders", id)); w.Code != http.StatusUnauthorized {
			t.Errorf("Middleware with an ID token = %d, want 401", w.Code)
		}
	}
}

// TestIDTokenOfSeveralAudiencesRefusedAsAccessToken: an ID token whose aud
// holds the API's audience beside the client ID (OIDC Core 2 allows
// several; azp names the client) was an access token at forward-auth,
// /introspect, /v1/verify and Middleware whenever audiences were
// configured. It is wrong_type there; it still verifies with "kind":
// "id_token".
func TestIDTokenOfSeveralAudiencesRefusedAsAccessToken(t *testing.T) {
	e := newEnv(t, envConfig{tokenCache: 64})
	protect, err := Middleware(e.v, MiddlewareOptions{Logger: e.srv.log})
	if err != nil {
		t.Fatalf("Middleware() = %v", err)
	}
	mw := protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	id := servertest.IDToken(nil, map[string]any{"aud": []string{servertest.Audience, servertest.ClientID}, "azp": servertest.ClientID})
	for range 2 { // the second may be a cache hit
		if w := do(e.handler, postJSON("/v1/verify", idBody(id, `"nonce":"`+servertest.Nonce+`"`))); !strings.Contains(w.Body.String(), `"valid":true`) {
			t.Fatalf(`/v1/verify "kind":"id_token" = %d %s, want valid`, w.Code, w.Body)
		}
		if w := do(e.handler, authzRequest(http.MethodGet, authzPath, id)); w.Code != http.StatusUnauthorized ||
			!strings.Contains(w.Header().Get("WWW-Authenticate"), `error_description="wrong_type"`) {
			t.Errorf("forward-auth with an ID token = %d %q, want 401 wrong_type", w.Code, w.Header().Get("WWW-Authenticate"))
		}
		if w := do(e.handler, postJSON("/v1/verify", `{"token":`+jsonString(id)+`}`)); !strings.Contains(w.Body.String(), `"error":"wrong_type"`) {
			t.Errorf("/v1/verify (access token) with an ID token = %d %s, want wrong_type", w.Code, w.Body)
		}
		if w := do(e.handler, introspectRequest("token="+url.QueryEscape(id), "gateway", "gateway-secret-value")); strings.TrimSpace(w.Body.String()) != `{"active":false}` {
			t.Errorf("/introspect with an ID token = %d %s, want {\"active\":false}", w.Code, w.Body)
		}
		if w := do(mw, authzRequest(http.MethodGet, "/orders", id)); w.Code != http.StatusUnauthorized {
			t.Errorf("Middleware with an ID token = %d, want 401", w.Code)
		}
	}
}
