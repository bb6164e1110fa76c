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
