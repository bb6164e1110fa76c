package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// TestRevocationOutlivedByLibraryToken (library red team): config gives
// every issuer max_lifetime = revocation.retention ("no token outlives
// the entries that name it", DECISIONS: "enforced by config"), but a
// program that builds the verifier itself (verify.Issuer.MaxLifetime zero,
// the library's default: no bound) and hands the server or the middleware
// a revocation store (README: pass service.Service.Revocations) got no
// such bound. A token living longer than the retention was revoked by jti,
// and once the entry expired it passed again, before its exp.
func TestRevocationOutlivedByLibraryToken(t *testing.T) {
	clock := servertest.NewClock()
	ka := &cache.Keys{}
	ka.Store(servertest.KeySet(t, servertest.Epoch))
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{Issuer: servertest.IssuerA, Keys: ka, Audiences: []string{servertest.Audience}}},
		Now:     clock.Now, IndexClaims: RevocationClaims(),
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: time.Minute, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok := mint(claims(map[string]any{"exp": servertest.Epoch.Add(time.Hour).Unix()})) // lives 1h, retention 1m
	if _, err := m.Add(context.Background(), revoke.Entry{Issuer: servertest.IssuerA, Kind: revoke.KindJTI, Value: "id-1", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	protect, err := Middleware(v, MiddlewareOptions{Revocations: m})
	if err != nil {
		return // refusing the combination is a fix too
	}
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	if w := do(h, authzRequest(http.MethodGet, "/app", tok)); w.Code != http.StatusUnauthorized {
		t.Fatalf("just revoked: Middleware = %d, want 401", w.Code)
	}
	clock.Add(2 * time.Minute) // the entry is gone; the token has 58 minutes left
	if w := do(h, authzRequest(http.MethodGet, "/app", tok)); w.Code == http.StatusTeapot {
		t.Errorf("revoked token after the retention: Middleware = %d (allowed), want 401: it outlived the entry that named it", w.Code)
	}
	srv, err := New(Options{Verifier: v, Revocations: m, Now: clock.Now})
	if err != nil {
		return
	}
	if d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok}); d.Allowed() {
		t.Errorf("revoked token after the retention: /v1/authz Decide = %d %q, want refused", d.Status, d.Class)
	}
}

// TestRevocationLifetimeBoundEdges: with a revocation store, the server
// itself bounds a JWT's lifetime by the store's retention, whatever the
// verifier was built with (here by hand: no max_lifetime, no claim
// required). A JWT without exp never ends, so no entry could outlive it:
// refused at once, not only once its iat is a retention old. exp − iat of
// exactly the retention passes, one second more does not.
func TestRevocationLifetimeBoundEdges(t *testing.T) {
	const retention = time.Hour
	tests := []struct {
		name string
		over map[string]any
		want bool // allowed
	}{
		{"exp-iat-equals-retention", map[string]any{"exp": servertest.Epoch.Add(retention).Unix()}, true},
		{"exp-iat-a-second-above", map[string]any{"exp": servertest.Epoch.Add(retention + time.Second).Unix()}, false},
		{"no-exp", map[string]any{"exp": nil}, false},
		{"no-exp-no-nbf", map[string]any{"exp": nil, "nbf": nil}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := servertest.NewClock()
			ka := &cache.Keys{}
			ka.Store(servertest.KeySet(t, servertest.Epoch))
			v, err := verify.New(verify.Options{
				Issuers: []verify.Issuer{{Issuer: servertest.IssuerA, Keys: ka, Audiences: []string{servertest.Audience}, RequiredClaims: []string{}}},
				Now:     clock.Now, IndexClaims: RevocationClaims(),
			})
			if err != nil {
				t.Fatal(err)
			}
			m, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: retention, Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			srv, err := New(Options{Verifier: v, Revocations: m, Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			clock.Add(time.Second)
			d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: mint(claims(tt.over))})
			if d.Allowed() != tt.want {
				t.Fatalf("Decide = %d %q, want allowed %v", d.Status, d.Class, tt.want)
			}
			if !tt.want && d.Class != verify.Class(verify.ErrLifetimeExceeded) {
				t.Errorf("class = %q, want %q", d.Class, verify.Class(verify.ErrLifetimeExceeded))
			}
		})
	}
}
