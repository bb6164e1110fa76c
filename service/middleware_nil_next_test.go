package service

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/server"
)

// TestMiddlewareOfNilHandlerIsRefusedAtOnce: Middleware(nil) (a program
// that took http.ListenAndServe(addr, nil)'s "nil is DefaultServeMux" for
// every handler) was accepted, and every request was then decided and, once
// allowed, crashed its goroutine on the nil handler (net/http logs the
// panic and drops the connection): no error said what was wrong until the
// first valid token came. It is refused where it is written, as
// http.ServeMux.Handle refuses a nil handler, naming it.
func TestMiddlewareOfNilHandlerIsRefusedAtOnce(t *testing.T) {
	s := startOrdersPlan(t, "")
	mw, err := server.Middleware(s.Server().Verifier(), server.MiddlewareOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for name, build := range map[string]func() http.Handler{
		"Service.Middleware": func() http.Handler { return s.Middleware(nil) },
		"Server.Middleware":  func() http.Handler { return s.Server().Middleware(nil) },
		"server.Middleware":  func() http.Handler { return mw(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				p := recover()
				if msg, _ := p.(string); !strings.Contains(msg, "nil") || !strings.Contains(msg, "handler") {
					t.Errorf("%s(nil) panicked with %v, want a panic naming the nil handler at construction", name, p)
				}
			}()
			build()
		})
	}
}
