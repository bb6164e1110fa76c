package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// nilIndexStore is a Revocations whose store keeps entries (Add, List,
// Delete work: the admin API acknowledges them) but whose Index is nil: an
// adapter over another store that has no in-memory copy, or one not built
// yet.
type nilIndexStore struct{ *revoke.Memory }

func (nilIndexStore) Index() *revoke.Index { return nil }

// TestRevocationsWithoutIndexRefused: Options.Revocations (and
// MiddlewareOptions.Revocations) given, so revocation is expected; a store
// whose Index is nil must be refused by the constructor (ErrInvalidOptions)
// or fail closed, never silently turn the revocation stage off while the
// store acknowledges entries.
func TestRevocationsWithoutIndexRefused(t *testing.T) {
	e := servertest.NewEnv(t, servertest.Config{NoDown: true})
	mem, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: 24 * time.Hour, Now: e.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	st := nilIndexStore{mem}
	tok := servertest.Mint(servertest.Claims(map[string]any{"jti": "revoked-jti"}))
	if _, err := st.Add(context.Background(), revoke.Entry{Issuer: servertest.IssuerA, Kind: revoke.KindJTI, Value: "revoked-jti", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Verifier: e.V, Revocations: st, Logger: slog.New(slog.DiscardHandler), Now: e.Clock.Now})
	switch {
	case errors.Is(err, server.ErrInvalidOptions):
		// refused: fine
	case err != nil:
		t.Fatalf("New() = %v, want nil or ErrInvalidOptions", err)
	default:
		d := srv.Decide(context.Background(), &server.Call{Headers: http.Header{"Authorization": {"Bearer " + tok}}})
		if d.Allowed() {
			t.Errorf("server.New accepted a Revocations with a nil Index, and a token its store revoked (acknowledged) is allowed: the revocation stage is silently off")
		}
	}
	mw, err := server.Middleware(e.V, server.MiddlewareOptions{Revocations: st, Logger: slog.New(slog.DiscardHandler)})
	switch {
	case errors.Is(err, server.ErrInvalidOptions):
	case err != nil:
		t.Fatalf("Middleware() = %v, want nil or ErrInvalidOptions", err)
	default:
		reached := false
		r := httptest.NewRequest("GET", "/orders", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })).ServeHTTP(httptest.NewRecorder(), r)
		if reached {
			t.Errorf("server.Middleware accepted a Revocations with a nil Index, and a revoked token reached the handler")
		}
	}
}
