package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestRevocationsAdminAPINullValue: a kind member given null
// ({"issuer": I, "jti": null}: a script's jq .jti of a token without one,
// or an unset variable passed through --argjson) read as absent, so the
// entry revoked every token of the issuer — what the request says without
// the member. An empty string is refused ("sub is empty"), and the CLI now
// refuses an empty --jti for that reason; null is the same mistake spelled
// in JSON.
func TestRevocationsAdminAPINullValue(t *testing.T) {
	for _, kind := range []string{"jti", "sid", "sub", "client_id"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, envConfig{revocations: true})
			w := do(e.srv.AdminHandler(), adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","`+kind+`":null}`))
			if w.Code != http.StatusBadRequest {
				t.Errorf("POST {%q: null} = %d %s, want 400 (not a revocation of the whole issuer)", kind, w.Code, strings.TrimSpace(w.Body.String()))
			}
		})
	}
}

// TestRevocationsAdminAPIMemberTwice: encoding/json keeps the last of two
// members and matches names in any case, so {"jti":"a","JTI":"b"} revoked
// b while the operator's script, its log and jq read a — and a stayed
// valid. Such a body is refused, as /v1/verify refuses one.
func TestRevocationsAdminAPIMemberTwice(t *testing.T) {
	for _, tc := range []struct{ name, members string }{
		{"same-name", `"jti":"a","jti":"b"`},
		{"other-case", `"jti":"a","JTI":"b"`},
		{"other-case-alone", `"Sub":"alice"`},
		{"issuer-twice", `"issuer":"https://other.example/","jti":"a"`},
		// encoding/json reads the byte as U+FFFD; the operator's
		// script and jq read another subject, or refuse the body.
		{"not-utf8", "\"sub\":\"\x97\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envConfig{revocations: true})
			w := do(e.srv.AdminHandler(), adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`",`+tc.members+`}`))
			if w.Code != http.StatusBadRequest {
				t.Errorf("POST {%s} = %d %s, want 400", tc.members, w.Code, strings.TrimSpace(w.Body.String()))
			}
		})
	}
	e := newEnv(t, envConfig{revocations: true})
	if w := do(e.srv.AdminHandler(), adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","jti":"a"}`)); w.Code != http.StatusCreated {
		t.Errorf("control: POST = %d %s, want 201", w.Code, strings.TrimSpace(w.Body.String()))
	}
}
