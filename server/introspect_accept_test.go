package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestIntrospectionAcceptPrefersJSON: the RFC 9701 answer is a choice of
// representation under RFC 9110 §12.5.1: a resource server that names the
// JWT type at a lower q than JSON (application/json, application/* or */*)
// prefers the JSON answer and gets it; one that gives the JWT type the
// higher or an equal q (the more specific range wins a tie) gets the JWT.
// acceptsJWT took the JWT type whenever it was listed with any q above 0,
// so a client saying JSON q=1, JWT q=0.1 got the JWT it ranked last.
func TestIntrospectionAcceptPrefersJSON(t *testing.T) {
	e, _ := newMintEnv(t, nil, func(o *Options) {
		o.IntrospectionClients = []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}}
	})
	for accept, wantJWT := range map[string]bool{
		"application/json, application/token-introspection+jwt;q=0.1":     false,
		"application/token-introspection+jwt;q=0.5, */*":                  false,
		"application/token-introspection+jwt;q=0.5, application/*;q=0.9":  false,
		"application/token-introspection+jwt":                             true,
		"application/token-introspection+jwt, application/json":           true,
		"application/json;q=0.5, application/token-introspection+jwt":     true,
		"application/token-introspection+jwt;q=0.5":                       true,
		"application/token-introspection+jwt;q=0.5, application/json;q=0": true,
		"application/json": false,
	} {
		r := httptest.NewRequest(http.MethodPost, "/introspect", strings.NewReader("token="+tokens()["valid"]))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.SetBasicAuth("gateway", "gateway-secret-value")
		r.Header.Set("Accept", accept)
		w := do(e.handler, r)
		gotJWT := w.Header().Get("Content-Type") == introspectionJWT
		if gotJWT != wantJWT {
			t.Errorf("Accept %q: Content-Type = %q, want the JWT answer: %v", accept, w.Header().Get("Content-Type"), wantJWT)
		}
	}
}
