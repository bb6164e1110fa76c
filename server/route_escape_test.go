package server

import (
	"net/http/httptest"
	"testing"
)

// TestAuthzUnreservedEscapeAsRawRoutersReadIt: a request path decoded
// for its unreserved escapes (/%70ublic/x as /public/x) was matched only
// in that spelling, while Express, @koa/router and chi (which routes on
// URL.RawPath when it is set) match the target as sent: to them
// /%70ublic/x is no /public route's path, and the handler they run for it
// (a "/:section/x" or a catch-all) is one the default policy guards. An
// anonymous route then let a request without a token reach it. When the
// two spellings choose other policies the request is ambiguous; when they
// choose the same one nothing changes.
func TestAuthzUnreservedEscapeAsRawRoutersReadIt(t *testing.T) {
	e := newPolicyEnv(t, nil) // /public/** anonymous, /admin/** and the default need the admins group
	admin := mint(claims(map[string]any{"scope": nil, "groups": []string{"admins"}}))
	for _, tt := range []struct {
		name, uri, token string
		want             int
	}{
		{"control-public", "/public/x", "", 200},
		{"control-escape-below-route", "/public/%7e/x", "", 200}, // /public/** in both spellings
		{"control-escape-in-default", "/other/%7e/x", "", 401},
		{"escaped-public-anonymous", "/%70ublic/x", "", 401},     // raw: no /public route, the default's
		{"escaped-public-lower-hex", "/%70ubli%63/x", "", 401},   // idem
		{"escaped-admin-same-policy", "/%61dmin/x", admin, 200},  // raw: the default, also admin
		{"escaped-public-with-token", "/%70ublic/x", admin, 403}, // ambiguous, whatever the token
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, nginxAuthz("GET", tt.uri, tt.token, nil))
			if w.Code != tt.want {
				t.Errorf("GET %s: %d, want %d (%s)", tt.uri, w.Code, tt.want, w.Body)
			}
		})
	}
}
