package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	e := newEnv(t, envConfig{maxTokenSize: 4096})
	toks := tokens()
	tests := []struct {
		name       string
		req        *http.Request
		token      string // must not appear in the response
		wantStatus int
		wantValid  bool
		wantError  string
	}{
		{name: "valid", req: postJSON("/v1/verify", `{"token":`+jsonString(toks["valid"])+`}`), token: toks["valid"], wantStatus: http.StatusOK, wantValid: true},
		{name: "expired", req: postJSON("/v1/verify", `{"token":`+jsonString(toks["expired"])+`}`), token: toks["expired"], wantStatus: http.StatusOK, wantError: "expired"},
		{name: "wrong-audience", req: postJSON("/v1/verify", `{"token":`+jsonString(toks["wrong-audience"])+`}`), token: toks["wrong-audience"], wantStatus: http.StatusOK, wantError: "wrong_audience"},
		{name: "bad-signature", req: postJSON("/v1/verify", `{"token":`+jsonString(toks["bad-signature"])+`}`), token: toks["bad-signature"], wantStatus: http.StatusOK, wantError: "bad_signature"},
		{name: "unknown-kid", req: postJSON("/v1/verify", `{"token":`+jsonString(toks["unknown-kid"])+`}`), token: toks["unknown-kid"], wantStatus: http.StatusOK, wantError: "unknown_kid"},
		{name: "unknown-issuer", req: postJSON("/v1/verify", `{"token":`+jsonString(toks["unknown-issuer"])+`}`), token: toks["unknown-issuer"], wantStatus: http.StatusOK, wantError: "unknown_issuer"},
		{name: "keys-unavailable", req: postJSON("/v1/verify", `{"token":`+jsonString(toks["keys-unavailable"])+`}`), token: toks["keys-unavailable"], wantStatus: http.StatusServiceUnavailable, wantError: "keys_unavailable"},
		{name: "garbage-token", req: postJSON("/v1/verify", `{"token":"not.a.jwt"}`), wantStatus: http.StatusOK, wantError: "malformed"},
		{name: "empty-token", req: postJSON("/v1/verify", `{"token":""}`), wantStatus: http.StatusOK, wantError: "missing_token"},
		{name: "token-too-large", req: postJSON("/v1/verify", `{"token":"`+strings.Repeat("a", 5000)+`"}`), wantStatus: http.StatusRequestEntityTooLarge, wantError: "token_too_large"},
		{name: "body-too-large", req: postJSON("/v1/verify", `{"token":"`+strings.Repeat("a", 70000)+`"}`), wantStatus: http.StatusRequestEntityTooLarge, wantError: "token_too_large"},
		{name: "unknown-members-ignored", req: postJSON("/v1/verify", `{"token":`+jsonString(toks["valid"])+`,"extra":[1,2]}`), token: toks["valid"], wantStatus: http.StatusOK, wantValid: true},
		{name: "not-json", req: postJSON("/v1/verify", `token=abc`), wantStatus: http.StatusBadRequest, wantError: "bad_request"},
		{name: "trailing-data", req: postJSON("/v1/verify", `{"token":"a"} {}`), wantStatus: http.StatusBadRequest, wantError: "bad_request"},
		{name: "missing-token", req: postJSON("/v1/verify", `{"jwt":"abc"}`), wantStatus: http.StatusBadRequest, wantError: "bad_request"},
		{name: "null-token", req: postJSON("/v1/verify", `{"token":null}`), wantStatus: http.StatusBadRequest, wantError: "bad_request"},
		{name: "token-not-string", req: postJSON("/v1/verify", `{"token":42}`), wantStatus: http.StatusBadRequest, wantError: "bad_request"},
		{name: "body-not-object", req: postJSON("/v1/verify", `["abc"]`), wantStatus: http.StatusBadRequest, wantError: "bad_request"},
		{name: "method-not-allowed", req: httptest.NewRequest(http.MethodGet, "/v1/verify", nil), wantStatus: http.StatusMethodNotAllowed, wantError: "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(e.handler, tt.req)
			if w.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", w.Code, tt.wantStatus, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q, want application/json; charset=utf-8", ct)
			}
			var got struct {
				Valid bool   `json:"valid"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if got.Valid != tt.wantValid || got.Error != tt.wantError {
				t.Errorf("body = %s, want valid=%v error=%q", w.Body, tt.wantValid, tt.wantError)
			}
			if tt.token != "" && strings.Contains(w.Body.String(), tt.token) {
				t.Errorf("response echoes the token")
			}
			checkGolden(t, "verify-"+tt.name, w)
		})
	}
}

func TestVerifyMethodNotAllowedHasAllow(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, path := range []string{"/v1/verify", "/v1/verify/batch", "/introspect"} {
		w := do(e.handler, httptest.NewRequest(http.MethodPut, path, nil))
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
			t.Errorf("PUT %s = %d Allow %q, want 405 Allow POST", path, w.Code, w.Header().Get("Allow"))
		}
	}
	w := do(e.handler, httptest.NewRequest(http.MethodPost, "/healthz", nil))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /healthz = %d Allow %q, want 405 Allow GET, HEAD", w.Code, w.Header().Get("Allow"))
	}
}

func TestClaimsPassThroughExactly(t *testing.T) {
	e := newEnv(t, envConfig{})
	tok := mint(claims(map[string]any{
		"huge":  json.Number("98765432109876543210987654321098765432109876543210"),
		"float": json.Number("1.000000000000000000000000001"),
		"exp2":  json.Number("1e400"),
	}))
	w := do(e.handler, postJSON("/v1/verify", `{"token":`+jsonString(tok)+`}`))
	iw := do(e.handler, introspectRequest("token="+tok, "gateway", "gateway-secret-value"))
	for name, body := range map[string]string{"verify": w.Body.String(), "introspect": iw.Body.String()} {
		for _, lit := range []string{
			"98765432109876543210987654321098765432109876543210",
			"1.000000000000000000000000001",
			"1e400",
			"123456789012345678901234567890",
			"3.14159265358979323846264338327950288",
		} {
			if !strings.Contains(body, lit) {
				t.Errorf("%s body %s lacks the literal %s", name, body, lit)
			}
		}
	}
}

func TestBatch(t *testing.T) {
	e := newEnv(t, envConfig{maxBatch: 8})
	toks := tokens()
	order := []string{"valid", "expired", "wrong-audience", "bad-signature", "unknown-kid", "keys-unavailable", "unknown-issuer"}
	list := make([]string, 0, len(order)+1)
	for _, n := range order {
		list = append(list, toks[n])
	}
	list = append(list, "")
	body, _ := json.Marshal(map[string]any{"tokens": list})

	t.Run("mixed-results-in-order", func(t *testing.T) {
		w := do(e.handler, postJSON("/v1/verify/batch", string(body)))
		if w.Code != http.StatusOK {
			t.Fatalf("status = %d, want 200", w.Code)
		}
		var got struct {
			Results []struct {
				Valid bool   `json:"valid"`
				Error string `json:"error"`
			} `json:"results"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := []string{"", "expired", "wrong_audience", "bad_signature", "unknown_kid", "keys_unavailable", "unknown_issuer", "missing_token"}
		if len(got.Results) != len(want) {
			t.Fatalf("results = %d, want %d", len(got.Results), len(want))
		}
		for i, r := range got.Results {
			if r.Error != want[i] || r.Valid != (want[i] == "") {
				t.Errorf("results[%d] = %+v, want error %q", i, r, want[i])
			}
		}
		for _, tok := range list {
			if tok != "" && strings.Contains(w.Body.String(), tok) {
				t.Errorf("response echoes a token")
			}
		}
		checkGolden(t, "batch-mixed", w)
	})
	tests := []struct {
		name       string
		body       string
		wantStatus int
	}{
		{name: "too-many", body: fmt.Sprintf(`{"tokens":[%s]}`, strings.TrimSuffix(strings.Repeat(`"a",`, 9), ",")), wantStatus: http.StatusBadRequest},
		{name: "empty-list", body: `{"tokens":[]}`, wantStatus: http.StatusOK},
		{name: "missing-tokens", body: `{"token":"abc"}`, wantStatus: http.StatusBadRequest},
		{name: "tokens-not-strings", body: `{"tokens":[1,2]}`, wantStatus: http.StatusBadRequest},
		{name: "token-null", body: `{"tokens":["a",null]}`, wantStatus: http.StatusBadRequest},
		{name: "body-too-large", body: `{"tokens":["` + strings.Repeat("a", 70000) + `"]}`, wantStatus: http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(e.handler, postJSON("/v1/verify/batch", tt.body))
			if w.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", w.Code, tt.wantStatus, w.Body)
			}
			checkGolden(t, "batch-"+tt.name, w)
		})
	}
}

func TestNotFound(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, path := range []string{"/", "/v1/verify/", "/v1/authzx", "/v2/verify"} {
		w := do(e.handler, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, w.Code)
		}
	}
	checkGolden(t, "not-found", do(e.handler, httptest.NewRequest(http.MethodGet, "/nope", nil)))
}

// TestVerifyAnonymousNamesMissingToken: /v1/verify without a token, under
// a policy that lets an anonymous request pass, is a verdict (200) that
// names its class: the request carries no token (missing_token), and the
// policy allows it. It said "keys_unavailable", the class of a failure to
// decide that is answered 503 everywhere else: a caller that reads the
// class retried or failed over on a request that was decided.
func TestVerifyAnonymousNamesMissingToken(t *testing.T) {
	e := newPolicyEnv(t, nil)
	for _, body := range []string{
		`{"token":"","policy":"public"}`,
		`{"token":"","policy":"public","request":{"method":"GET","host":"api.example.com","path":"/public/x"}}`,
	} {
		w := do(e.handler, postJSON("/v1/verify", body))
		want := `{"valid":false,"allowed":true,"error":"missing_token","message":"missing_token: the request carries no token","policy":"public"}` + "\n"
		if w.Code != http.StatusOK || w.Body.String() != want {
			t.Errorf("POST /v1/verify %s = %d %s, want 200 %s", body, w.Code, w.Body, want)
		}
	}
}

// TestClosedServerBodyTooLarge: a closed server ([Server.SetClosed]) refuses
// a body over MaxBodyBytes with an answer its endpoint documents: /v1/verify
// and /introspect 503 keys_unavailable, as they refuse every request once
// closed; a batch 413 token_too_large (a batch answers no 503). The batch
// said 413 {"error":"keys_unavailable"} (a class api/openapi.yaml's 413 does
// not have), and /introspect 413 with the message "the service is closed".
func TestClosedServerBodyTooLarge(t *testing.T) {
	e := newEnv(t, envConfig{maxBody: 16384})
	e.srv.SetClosed()
	big := strings.Repeat("a", 20000)
	intro := httptest.NewRequest(http.MethodPost, "/introspect", strings.NewReader("token="+big))
	intro.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	intro.SetBasicAuth("gateway", "gateway-secret-value")
	for _, c := range []struct {
		name   string
		r      *http.Request
		status int
		class  string
	}{
		{"verify", postJSON("/v1/verify", `{"token":"`+big+`"}`), http.StatusServiceUnavailable, "keys_unavailable"},
		{"batch", postJSON("/v1/verify/batch", `{"tokens":["`+big+`"]}`), http.StatusRequestEntityTooLarge, "token_too_large"},
		{"introspect", intro, http.StatusServiceUnavailable, "keys_unavailable"},
	} {
		w := do(e.handler, c.r)
		var body struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != c.status || body.Error != c.class {
			t.Errorf("%s: a body too large on a closed server = %d %s, want %d with error %q", c.name, w.Code, w.Body, c.status, c.class)
		}
		if w.Code == http.StatusRequestEntityTooLarge && strings.Contains(body.Message, "closed") {
			t.Errorf("%s: 413 with message %q, which is the 503's", c.name, body.Message)
		}
	}
}
