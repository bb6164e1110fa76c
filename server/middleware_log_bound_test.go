package server

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestMiddlewareRejectionLogBounded: the in-process Middleware (package
// function) logged one "token rejected" line per bad token with no bound,
// so any client of the application could write a line per request; it
// holds them to DefaultRejectionLogRate a second, as forward-auth does.
func TestMiddlewareRejectionLogBounded(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.logs.Reset()
	protect, err := Middleware(e.v, MiddlewareOptions{Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	const n = 500
	for i := 0; i < n; i++ {
		if w := do(h, authzRequest(http.MethodGet, "/app", "garbage.garbage.garbage")); w.Code != http.StatusUnauthorized {
			t.Fatalf("status %d", w.Code)
		}
	}
	got := strings.Count(e.logs.String(), `"msg":"token rejected"`)
	if got > DefaultRejectionLogRate {
		t.Errorf("%d bad tokens (one clock second) wrote %d \"token rejected\" lines; want at most %d", n, got, DefaultRejectionLogRate)
	}
}
