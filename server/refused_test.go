package server

import (
	"net/http"
	"testing"
)

// TestRefusedOrDecidedStrictly: requests a red team tried against the
// forward-auth pipeline that held, kept as a regression list: each is
// refused or decided under the stricter route. Double encoding and overlong
// UTF-8 are decided as sent (only an application that decodes twice, or
// accepts overlong forms, reads another path; SPEC covers neither).
func TestRefusedOrDecidedStrictly(t *testing.T) {
	e := newPolicyEnv(t, nil)
	read := mint(claims(map[string]any{"scope": "orders:read"}))
	for _, tc := range []struct {
		name string
		r    *http.Request
		want int
	}{
		{"double-encoded-dotdot", nginxAuthz("GET", "/public/%252e%252e/admin", "", nil), 200}, // NOT refused: decided as /public/...; only an app that decodes twice reads /admin
		{"overlong-utf8-dot", nginxAuthz("GET", "/public/%c0%ae%c0%ae/admin", "", nil), 200},   // NOT refused: overlong UTF-8 dot kept; only a decoder that accepts overlong forms reads ..
		{"dot-segment-trailing", nginxAuthz("GET", "/public/x/..", "", nil), 401},
		{"override-twin-header", nginxAuthz("GET", "/orders/1", read, map[string]string{"X_http_method_override": "DELETE"}), 403},
		{"override-lower", nginxAuthz("GET", "/orders/1", read, map[string]string{"X-Http-Method-Override": "delete"}), 403},
		{"method-lower", nginxAuthz("delete", "/orders/1", read, nil), 403},
		{"bearer-tab", nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": "Bearer\t" + read}), 401},
		{"bearer-two-spaces", nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": "Bearer  " + read}), 401},
		{"query-only-_method-array", nginxAuthz("GET", "/orders/1?_method[]=DELETE", read, nil), 403},
		// DPoP is off here: a DPoP credential was no token at all, and an
		// anonymous route let it through unverified.
		{"dpop-scheme-dpop-off", nginxAuthz("GET", "/public/x", "", map[string]string{"Authorization": "DPoP " + read}), 401},
	} {
		w := do(e.handler, tc.r)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
	}
	// Two X-Original-Uri: refused.
	r := nginxAuthz("GET", "/public/x", "", nil)
	r.Header.Add("X-Original-Uri", "/admin")
	if w := do(e.handler, r); w.Code == 200 {
		t.Errorf("two X-Original-Uri: %d", w.Code)
	}
	// Two Authorization (HTTP): ambiguous.
	r = nginxAuthz("GET", "/public/x", "", nil)
	r.Header.Add("Authorization", "Basic YTpi")
	r.Header.Add("Authorization", "Bearer x.y.z")
	if w := do(e.handler, r); w.Code != 401 {
		t.Errorf("two Authorization: %d", w.Code)
	}
	// A cached allow under one policy does not answer another route.
	if w := do(e.handler, nginxAuthz("GET", "/orders/1", read, nil)); w.Code != 200 {
		t.Fatalf("warm: %d", w.Code)
	}
	if w := do(e.handler, nginxAuthz("POST", "/orders/1", read, nil)); w.Code != 403 {
		t.Errorf("cached token on the write route: %d", w.Code)
	}
}
