package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// TestVerifyNullInputIsNotAbsent: an ID-token input (or "policy") given as
// null is a caller's missing value, not a request to skip the check:
// {"kind":"id_token","nonce":null} accepted an ID token whatever its nonce,
// as "acr_values":[] accepted any acr, and {"policy":null} answered
// valid:true with no policy run. "" is already refused ("leave it out to
// not check it"), as the revocations API refuses {"jti":null}.
func TestVerifyNullInputIsNotAbsent(t *testing.T) {
	e := newEnv(t, envConfig{tokenCache: 64})
	good := servertest.IDToken(nil, nil)
	access := servertest.Mint(servertest.Claims(nil))
	for _, body := range []string{
		idBody(good, `"nonce":null`),
		idBody(good, `"access_token":null`),
		idBody(good, `"code":null`),
		idBody(good, `"max_age":null`),
		idBody(good, `"acr_values":null`),
		idBody(good, `"acr_values":[]`),
		`{"token":` + jsonString(access) + `,"nonce":null}`,
		`{"token":` + jsonString(access) + `,"policy":null}`,
	} {
		w := do(e.handler, postJSON("/v1/verify", body))
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s\n  = %d %.90s…, want 400 bad_request: a check the caller named was skipped", body[len(body)-40:], w.Code, w.Body)
		}
	}
}

// TestOpaqueUnavailableMessageNamesNoEndpoint: a 503 for an opaque token
// whose authorization server does not answer must not tell the caller
// where that server is: /v1/verify (unauthenticated by default), its batch
// and /introspect answered "POST http://<internal host>/<path>: status
// 500" (or a dial error with the address), while a JWT's keys_unavailable
// says only "the issuer of the token has no usable key set" and messages
// never name configuration (DECISIONS, "Caller messages").
func TestOpaqueUnavailableMessageNamesNoEndpoint(t *testing.T) {
	clock := servertest.NewClock()
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer as.Close()
	const path = "/internal/admin/oauth2/introspect"
	ic, err := introspect.New(introspect.Options{Issuer: "https://as.example.com/", URL: as.URL + path, MaxTTL: time.Minute,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	v, err := verify.New(verify.Options{Now: clock.Now,
		Issuers: []verify.Issuer{{Issuer: "https://as.example.com/", Keys: &cache.Keys{}, Introspector: ic, RequiredClaims: []string{}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Verifier: v, Logger: slog.New(slog.DiscardHandler), Now: clock.Now,
		IntrospectionClients: []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}}})
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(as.URL, "http://")
	for name, r := range map[string]*http.Request{
		"verify":     postJSON("/v1/verify", `{"token":"opaque-x"}`),
		"batch":      postJSON("/v1/verify/batch", `{"tokens":["opaque-x"]}`),
		"introspect": introspectRequest("token=opaque-x", "gateway", "gateway-secret-value"),
	} {
		w := do(srv.Handler(), r)
		if !strings.Contains(w.Body.String(), "keys_unavailable") {
			t.Fatalf("%s = %d %s, want keys_unavailable", name, w.Code, w.Body)
		}
		if b := w.Body.String(); strings.Contains(b, host) || strings.Contains(b, path) {
			t.Errorf("%s = %d %s: the answer names the introspection endpoint", name, w.Code, b)
		}
	}
}

// TestRevocationsListQueryStrict: GET /v1/revocations reads issuer once:
// a repeated issuer was read as its first value, and a query holding a ';'
// (which net/url drops with the pair) or an issuer spelled "Issuer" was
// no filter at all, listing every issuer's entries. Another reader of the
// query (a proxy's log, an operator's script) sees another request.
func TestRevocationsListQueryStrict(t *testing.T) {
	e := newEnv(t, envConfig{revocations: true})
	admin := e.srv.AdminHandler()
	revokeVia(t, e.srv, `{"issuer":"`+issuerA+`","jti":"j-1"}`)
	revokeVia(t, e.srv, `{"issuer":"`+servertest.IssuerDown+`","jti":"j-2"}`)
	for _, q := range []string{
		"issuer=" + url.QueryEscape(issuerA) + "&issuer=" + url.QueryEscape(servertest.IssuerDown),
		"issuer=" + url.QueryEscape(issuerA) + ";x=1",
		"issuer=" + url.QueryEscape(issuerA) + "&issuer=",
	} {
		w := do(admin, adminRequest(http.MethodGet, revocationsPath+"?"+q, ""))
		if w.Code != http.StatusBadRequest {
			t.Errorf("GET ?%s = %d %.120s…, want 400 invalid_request", q, w.Code, w.Body)
		}
	}
}

// TestBodyCharsetOtherThanUTF8Refused: a body labelled with another
// charset is read as UTF-8 here and as that charset by whoever honours the
// label; principle 2 refuses it. POST /v1/revocations stored an entry
// under application/json; charset=iso-8859-1 (its "sub":"é" is "Ã©" to a
// Latin-1 reader), /introspect answered a form labelled charset=utf-16.
func TestBodyCharsetOtherThanUTF8Refused(t *testing.T) {
	e := newEnv(t, envConfig{revocations: true})
	r := adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","sub":"é"}`)
	r.Header.Set("Content-Type", "application/json; charset=iso-8859-1")
	if w := do(e.srv.AdminHandler(), r); w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("POST %s charset=iso-8859-1 = %d %s, want 415", revocationsPath, w.Code, w.Body)
	}
	r = introspectRequest("token="+url.QueryEscape(tokens()["valid"]), "gateway", "gateway-secret-value")
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-16")
	if w := do(e.handler, r); w.Code != http.StatusBadRequest {
		t.Errorf("/introspect charset=utf-16 = %d %.60s…, want 400 invalid_request", w.Code, w.Body)
	}
	// utf-8 stays accepted.
	r = adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","sub":"é"}`)
	r.Header.Set("Content-Type", "application/json; charset=UTF-8")
	if w := do(e.srv.AdminHandler(), r); w.Code != http.StatusCreated {
		t.Errorf("POST %s charset=UTF-8 = %d %s, want 201", revocationsPath, w.Code, w.Body)
	}
	r = introspectRequest("token="+url.QueryEscape(tokens()["valid"]), "gateway", "gateway-secret-value")
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if w := do(e.handler, r); w.Code != http.StatusOK {
		t.Errorf("/introspect charset=utf-8 = %d, want 200", w.Code)
	}
}

// TestIntrospectHintOnce: RFC 6749 §3.1 (which /introspect cites for a
// repeated token): "Request and response parameters MUST NOT be included
// more than once." A repeated token_type_hint was answered.
func TestIntrospectHintOnce(t *testing.T) {
	e := newEnv(t, envConfig{})
	form := "token=" + url.QueryEscape(tokens()["valid"]) + "&token_type_hint=access_token&token_type_hint=refresh_token"
	if w := do(e.handler, introspectRequest(form, "gateway", "gateway-secret-value")); w.Code != http.StatusBadRequest {
		t.Errorf("token_type_hint twice = %d %.60s…, want 400 invalid_request", w.Code, w.Body)
	}
}
