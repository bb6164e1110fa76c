package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
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
	h := Middleware(e.v, MiddlewareOptions{Logger: e.srv.log})(next)
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

func TestMiddlewarePanicsOnBadOptions(t *testing.T) {
	e := newEnv(t, envConfig{})
	defer func() {
		if recover() == nil {
			t.Errorf("Middleware(bad source) did not panic")
		}
	}()
	Middleware(e.v, MiddlewareOptions{TokenSources: []TokenSource{{Header: "A", Cookie: "b"}}})
	_ = httptest.NewRecorder()
}
