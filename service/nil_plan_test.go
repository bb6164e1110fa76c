package service

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestNilPlanIsAnError: a nil plan is what config.Load returns beside its
// error, and a program's watcher that counts the error (ReloadFailed) but
// goes on to Reload(ctx, plan) panicked in its own goroutine, which ends
// the process instead of keeping the previous configuration serving. New,
// Check and Reload refuse a nil plan with an error, as server.Middleware
// refuses a nil verifier.
func TestNilPlanIsAnError(t *testing.T) {
	o := Options{Logger: slog.New(slog.DiscardHandler)}
	for name, call := range map[string]func() error{
		"New":   func() error { s, err := New(nil, o); _ = s; return err },
		"Check": func() error { return Check(nil, o) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s(nil) panicked: %v", name, r)
				}
			}()
			if err := call(); err == nil {
				t.Errorf("%s(nil) = nil error", name)
			}
		})
	}
	t.Run("Reload", func(t *testing.T) {
		s := startOrdersPlan(t, "")
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Reload(nil) panicked: %v", r)
				}
			}()
			if err := s.Reload(t.Context(), nil); err == nil {
				t.Error("Reload(nil) = nil error")
			}
		}()
		now := time.Now()
		tok := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
		r := httptest.NewRequest("GET", "https://api.example/x", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		s.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Errorf("after Reload(nil): %d, want the previous configuration serving (200)", w.Code)
		}
	})
}
