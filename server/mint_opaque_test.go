package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/introspect"
	mintpkg "github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/policy/celexpr"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// TestMintedOpaqueSourceFollowsItsAnswer: an opaque source token (the
// phantom-token pattern) is the same string while its authorization
// server's answer changes (scope taken away, its life shortened). The
// minted token must be minted from the answer the request was decided on:
// its exp never after the source's exp (SPEC: exp = min(now + ttl, the
// source token's exp)), its mapped claims the source's now. The minted
// cache, keyed by the token's string, handed out the token minted from the
// old answer: a scope the source no longer has, and an exp after the
// source's.
func TestMintedOpaqueSourceFollowsItsAnswer(t *testing.T) {
	clock := servertest.NewClock()
	t0 := clock.Now()
	var answer atomic.Pointer[string]
	set := func(scope string, exp time.Time) {
		s := `{"active":true,"sub":"alice","client_id":"web","scope":"` + scope + `","exp":` + jsonNumber(exp.Unix()) + `,"iat":` + jsonNumber(t0.Unix()) + `}`
		answer.Store(&s)
	}
	set("orders:read orders:write", t0.Add(time.Hour))
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("token") != "opaque-alice" {
			io.WriteString(w, `{"active":false}`)
			return
		}
		io.WriteString(w, *answer.Load())
	}))
	defer as.Close()
	const iss = "https://as.example.com/"
	ic, err := introspect.New(introspect.Options{Issuer: iss, URL: as.URL, MaxTTL: time.Minute, StaleFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	set2, err := policy.New(policy.Options{
		Compiler: &celexpr.Compiler{},
		Policies: []policy.Spec{{Name: "orders-read", Scopes: policy.Scopes{Any: []string{"orders:read"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := verify.New(verify.Options{Now: clock.Now, IndexClaims: set2.ClaimNames(),
		Issuers: []verify.Issuer{{Issuer: iss, Keys: &cache.Keys{}, Introspector: ic, RequiredClaims: []string{}}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mint.jwks")
	if err := os.WriteFile(path, testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "m1"}), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := mintpkg.New(mintpkg.Options{Issuer: "https://jwksverify.internal", KeysFile: path, SigningKid: "m1", TTL: 5 * time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mp, err := mintpkg.NewPolicy(mintpkg.PolicySpec{Audience: "orders-service", Claims: map[string]string{"scope": "scope"}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Verifier: v, Policies: set2, Minter: m, MintPolicies: map[string]*mintpkg.Policy{"orders-read": mp},
		Logger: slog.New(slog.DiscardHandler), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{clock: clock}
	decide := func() jwt.MapClaims {
		t.Helper()
		d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: "opaque-alice", Policy: "orders-read", Mint: true})
		if !d.Allowed() || d.Minted == "" {
			t.Fatalf("status %d class %q minted %q, want allowed and minted", d.Status, d.Class, d.Minted)
		}
		_, c := parseMinted(t, m, e, d.Minted)
		return c
	}
	if c := decide(); c["scope"] != "orders:read orders:write" {
		t.Fatalf("first minted scope = %v", c["scope"])
	}
	// The AS takes orders:write away and ends the token's life sooner.
	clock.Add(2 * time.Minute)
	sourceExp := t0.Add(2*time.Minute + 30*time.Second)
	set("orders:read", sourceExp)
	c := decide()
	exp, _ := c.GetExpirationTime()
	if exp == nil || exp.After(sourceExp) {
		t.Errorf("minted exp = %v, after the source's exp %v (the answer the request was decided on)", exp, sourceExp)
	}
	if c["scope"] != "orders:read" {
		t.Errorf("minted scope = %q, want the source's scope now, orders:read", c["scope"])
	}
}
