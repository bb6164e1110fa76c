package service

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
)

// TestClosedServiceAdmitsNothing: after Close nothing refreshes the keys or
// follows the revocations, and the memory store's lock is released, so a
// program replaces the service with a new one over the same state_dir. A
// ServeMux cannot unmount a handler: the old service's Middleware and
// Handler stay mounted where the program wired them. They admitted every
// token the frozen state still took, a token revoked in the new service
// too. A closed service decides nothing: every request it is handed is
// refused (503), never allowed.
func TestClosedServiceAdmitsNothing(t *testing.T) {
	plan := memoryRevocationPlan(t, t.TempDir())
	o := Options{Logger: slog.New(slog.DiscardHandler)}
	old, err := New(plan, o)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := old.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claims := claimsAt("https://a.example/", "orders", now)
	claims["jti"] = "t-1"
	tok := mintRS256(claims)
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	mw := old.Middleware(app)
	h := old.Handler()
	serve := func(h http.Handler, path string) int {
		r := httptest.NewRequest("GET", "http://api.example"+path, nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if c := serve(mw, "/orders/1"); c != http.StatusTeapot {
		t.Fatalf("premise: Middleware before Close = %d, want the application's 418", c)
	}
	if c := serve(h, "/v1/authz"); c != http.StatusOK {
		t.Fatalf("premise: /v1/authz before Close = %d, want 200", c)
	}
	old.Close()

	// The program's new service over the same state_dir revokes the token.
	next, err := New(plan, o)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if _, err := next.Revocations().Add(ctx, revoke.Entry{Issuer: "https://a.example/", Kind: revoke.KindJTI, Value: "t-1", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	if c := serve(next.Middleware(app), "/orders/1"); c != http.StatusUnauthorized {
		t.Fatalf("premise: the new service's Middleware = %d, want 401 revoked", c)
	}
	for _, tt := range []struct {
		name string
		h    http.Handler
		path string
	}{
		{"Middleware-built-before-Close", mw, "/orders/1"},
		{"Middleware-built-after-Close", old.Middleware(app), "/orders/1"},
		{"Handler-authz", h, "/v1/authz"},
		{"Handler-authz-built-after-Close", old.Handler(), "/v1/authz/orders/1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if c := serve(tt.h, tt.path); c != http.StatusServiceUnavailable {
				t.Errorf("%s after Close = %d, want 503: a closed service admitted a token revoked since (%s)", tt.path, c, strings.TrimSpace(http.StatusText(c)))
			}
		})
	}
}
