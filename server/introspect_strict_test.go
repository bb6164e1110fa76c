package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestIntrospectRequiredConstraintUnbound: an issuer whose tokens must be
// sender-constrained (sender_constraint dpop/mtls: required) refuses an
// unbound token on every front end; /introspect skips the proof checks
// (its caller holds the proof, and gets cnf) but an unbound token has no
// cnf for that caller to check, so "active" made it a bearer token at
// every resource server that introspects.
func TestIntrospectRequiredConstraintUnbound(t *testing.T) {
	// Each constraint on its own too: with both required, either check
	// refused the token, and dropping one passed.
	for _, tt := range []struct {
		name string
		sc   SenderConstraint
	}{
		{"both", SenderConstraint{DPoP: ConstraintRequired, MTLS: ConstraintRequired}},
		{"dpop", SenderConstraint{DPoP: ConstraintRequired}},
		{"mtls", SenderConstraint{MTLS: ConstraintRequired}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newBindEnvWith(t, tt.sc, nil, nil)
			unbound := tokens()["valid"] // no cnf
			// The JSON API refuses it: the issuer requires a bound token.
			vr := httptest.NewRequest(http.MethodPost, "/v1/verify", strings.NewReader(`{"token":"`+unbound+`"}`))
			if w := do(e.handler, vr); !strings.Contains(w.Body.String(), `"valid":false`) || !strings.Contains(w.Body.String(), "binding_mismatch") {
				t.Fatalf("/v1/verify = %d %s, want binding_mismatch", w.Code, w.Body)
			}
			r := httptest.NewRequest(http.MethodPost, "/introspect", strings.NewReader("token="+unbound))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.SetBasicAuth("gateway", "gateway-secret-value")
			w := do(e.handler, r)
			if w.Body.String() != `{"active":false}`+"\n" {
				t.Errorf("/introspect of an unbound token of an issuer requiring a binding = %d %s, want {\"active\":false}", w.Code, w.Body)
			}
		})
	}
}

// TestIntrospectionJWTAcceptQZero: Accept with q=0 says the type is not
// acceptable (RFC 9110 §12.4.2); the answer must then be the JSON one.
func TestIntrospectionJWTAcceptQZero(t *testing.T) {
	e, _ := newMintEnv(t, nil, func(o *Options) {
		o.IntrospectionClients = []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}}
	})
	for _, accept := range []string{
		"application/token-introspection+jwt;q=0, application/json",
		"application/json, application/token-introspection+jwt; q=0.0",
	} {
		r := httptest.NewRequest(http.MethodPost, "/introspect", strings.NewReader("token="+tokens()["valid"]))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.SetBasicAuth("gateway", "gateway-secret-value")
		r.Header.Set("Accept", accept)
		w := do(e.handler, r)
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Accept %q: Content-Type = %q, want application/json", accept, ct)
		}
	}
}

// TestBatchTokensMemberOnce: the batch body names its tokens once, in the
// one spelling, as /v1/verify's members (exactMembers): encoding/json (a
// gateway, a log, a Go client reading the body back) matches "Tokens" to
// tokens and keeps the last of two, so it saw other tokens than the ones
// verified, in the order the results are read by.
func TestBatchTokensMemberOnce(t *testing.T) {
	e := newEnv(t, envConfig{maxBatch: 8})
	good, bad := jsonString(tokens()["valid"]), jsonString(tokens()["expired"])
	for name, body := range map[string]string{
		"other-case-after":  `{"tokens":[` + good + `],"Tokens":[` + bad + `]}`,
		"other-case-before": `{"TOKENS":[` + bad + `],"tokens":[` + good + `]}`,
		"null-then-tokens":  `{"tokens":null,"tokens":[` + good + `]}`,
	} {
		t.Run(name, func(t *testing.T) {
			w := do(e.handler, postJSON("/v1/verify/batch", body))
			if w.Code != http.StatusBadRequest {
				t.Errorf("status = %d, want 400 (body %s)", w.Code, w.Body)
			}
		})
	}
}
