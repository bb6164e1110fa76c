package server

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/verify"
)

func TestMiddleware(t *testing.T) {
	e := newEnv(t, envConfig{})
	toks := tokens()
	var gotSub string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok := ResultFromContext(r.Context())
		if !ok {
			t.Errorf("ResultFromContext() = false inside the middleware")
			return
		}
		gotSub = res.Subject
		w.WriteHeader(http.StatusTeapot)
	})
	protect, err := Middleware(e.v, MiddlewareOptions{Logger: e.srv.log})
	if err != nil {
		t.Fatalf("Middleware() = %v", err)
	}
	h := protect(next)
	tests := []struct {
		name       string
		token      string
		wantStatus int
		wantWWW    string
	}{
		{name: "valid", token: toks["valid"], wantStatus: http.StatusTeapot},
		{name: "expired", token: toks["expired"], wantStatus: http.StatusUnauthorized, wantWWW: `Bearer error="invalid_token", error_description="expired"`},
		{name: "no-token", wantStatus: http.StatusUnauthorized, wantWWW: `Bearer realm="jwksverify"`},
		{name: "keys-unavailable", token: toks["keys-unavailable"], wantStatus: http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotSub = ""
			w := do(h, authzRequest(http.MethodGet, "/app", tt.token))
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d", w.Code, tt.wantStatus)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.wantWWW {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.wantWWW)
			}
			if tt.wantStatus == http.StatusTeapot && gotSub != "alice" {
				t.Errorf("next saw sub %q, want alice", gotSub)
			}
			if tt.wantStatus != http.StatusTeapot && gotSub != "" {
				t.Errorf("next ran for a denied request")
			}
		})
	}
}

func TestResultFromContextEmpty(t *testing.T) {
	if res, ok := ResultFromContext(context.Background()); ok || res != nil {
		t.Errorf("ResultFromContext(empty) = %v, %v; want nil, false", res, ok)
	}
}

func TestMiddlewareRejectsBadOptions(t *testing.T) {
	e := newEnv(t, envConfig{})
	tests := []struct {
		name string
		v    *verify.Verifier
		opts MiddlewareOptions
	}{
		{"no-verifier", nil, MiddlewareOptions{}},
		{"source-with-two-places", e.v, MiddlewareOptions{TokenSources: []TokenSource{{Header: "A", Cookie: "b"}}}},
		{"source-with-none", e.v, MiddlewareOptions{TokenSources: []TokenSource{{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mw, err := Middleware(tt.v, tt.opts)
			if !errors.Is(err, ErrInvalidOptions) || mw != nil {
				t.Errorf("Middleware() = %v, %v; want nil, %v", mw != nil, err, ErrInvalidOptions)
			}
		})
	}
}

// TestMiddlewareJudgesOnTheVerifiersClock: the middleware has no clock of
// its own; a verifier judging at a fixed instant is honoured.
func TestMiddlewareJudgesOnTheVerifiersClock(t *testing.T) {
	e := newEnv(t, envConfig{})
	protect, err := Middleware(e.v, MiddlewareOptions{Logger: e.srv.log})
	if err != nil {
		t.Fatal(err)
	}
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	tok := tokens()["valid"] // exp epoch+1h
	if w := do(h, authzRequest(http.MethodGet, "/", tok)); w.Code != http.StatusNoContent {
		t.Fatalf("at epoch: status = %d, want 204", w.Code)
	}
	e.clock.Add(2 * time.Hour)
	if w := do(h, authzRequest(http.MethodGet, "/", tok)); w.Code != http.StatusUnauthorized {
		t.Errorf("2h later on the verifier's clock: status = %d, want 401 expired", w.Code)
	}
}

// TestMiddlewareRevocations: a token revoked in the store forward-auth
// checks is refused by Middleware too when it is handed the store, as
// /v1/authz refuses it (it passed: the middleware had no revocation
// stage and no way to be given one).
func TestMiddlewareRevocations(t *testing.T) {
	e := newEnv(t, envConfig{revocations: true})
	tok := tokens()["valid"]
	if _, err := e.revocations.Add(context.Background(), revoke.Entry{Issuer: issuerA, Kind: revoke.KindJTI, Value: "id-1", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	want := `Bearer error="invalid_token", error_description="revoked"`
	if w := do(e.handler, authzRequest(http.MethodGet, "/v1/authz", tok)); w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != want {
		t.Fatalf("/v1/authz = %d %q, want 401 revoked", w.Code, w.Header().Get("WWW-Authenticate"))
	}
	protect, err := Middleware(e.v, MiddlewareOptions{Logger: e.srv.log, Revocations: e.revocations})
	if err != nil {
		t.Fatal(err)
	}
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	if w := do(h, authzRequest(http.MethodGet, "/app", tok)); w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != want {
		t.Errorf("Middleware = %d %q, want 401 revoked as /v1/authz", w.Code, w.Header().Get("WWW-Authenticate"))
	}
}
