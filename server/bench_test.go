package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkAuthz measures forward-auth, the hot path, against a bare
// net/http handler: a repeated token (cached verdict) and a token verified
// every time (token cache off).
func BenchmarkAuthz(b *testing.B) {
	tok := mint(claims(nil))
	bench := func(b *testing.B, h http.Handler) {
		r := httptest.NewRequest(http.MethodGet, "/v1/authz/app", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Fatalf("status = %d", w.Code)
			}
		}
	}
	b.Run("bare", func(b *testing.B) {
		bench(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.WriteHeader(http.StatusOK)
		}))
	})
	b.Run("cached", func(b *testing.B) { bench(b, newEnv(b, envConfig{tokenCache: 1000}).handler) })
	b.Run("uncached", func(b *testing.B) { bench(b, newEnv(b, envConfig{}).handler) })
	b.Run("denied", func(b *testing.B) {
		e := newEnv(b, envConfig{})
		e.srv.log = slog.New(slog.DiscardHandler)
		r := httptest.NewRequest(http.MethodGet, "/v1/authz/app", nil)
		r.Header.Set("Authorization", "Bearer "+tokens()["expired"])
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, r)
			if w.Code != http.StatusUnauthorized {
				b.Fatal(fmt.Sprint("status = ", w.Code))
			}
		}
	})
}
