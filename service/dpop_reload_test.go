package service

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/request"
)

// TestReloadRaisingDPoPMaxAgeKeepsReplays: a proof used under
// dpop.max_age 10s is remembered for 10s plus the leeway. After a reload
// to max_age 60s it must still be refused once that entry is gone (the
// reloaded checker holds the proofs of the old one's time to 10s), while a
// proof issued after the reload gets the whole 60s.
func TestReloadRaisingDPoPMaxAgeKeepsReplays(t *testing.T) {
	jwksSrv := jwksServer(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	load := func(maxAge string) *config.Plan {
		t.Helper()
		return writePlan(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
dpop: {replay_store: memory, max_age: %s}
issuers:
  - issuer: https://idp.example/
    jwks_url: %s
    leeway: 5s
    sender_constraint: {dpop: optional}
`, maxAge, jwksSrv.URL))
	}
	l := startLive(t, load("10s"))
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	used := dpopInput(t, "used-before", now)
	if _, err := l.cur.Load().server.DPoP().Check(ctx, used, now); err != nil {
		t.Fatalf("first use: %v", err)
	}
	mustReload(t, l, ctx, load("60s"))
	c := l.cur.Load().server.DPoP()
	if c.MaxAge() != time.Minute {
		t.Fatalf("reloaded max_age = %s", c.MaxAge())
	}
	if _, err := c.Check(ctx, used, now.Add(30*time.Second)); err == nil {
		t.Error("a proof used before the reload is accepted again 30s later (its 15s replay entry is gone)")
	}
	late := now.Add(15 * time.Minute)
	if _, err := c.Check(ctx, dpopInput(t, "issued-after", late), late.Add(40*time.Second)); err != nil {
		t.Errorf("a proof issued after the reload, 40s old under max_age 60s: %v", err)
	}
}

// dpopInput is a DPoP proof of key EC256A, named jti and issued at iat,
// for GET https://api.example/ with a token of https://idp.example/ bound
// to that key (leeway 5s).
func dpopInput(t *testing.T, jti string, iat time.Time) dpop.Input {
	t.Helper()
	const tok = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"
	k, err := cache.NewKey(testkeys.Public(testkeys.EC256A), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(tok))
	p := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A),
		map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256A)})},
		map[string]any{"jti": jti, "htm": "GET", "htu": "https://api.example/", "iat": iat.Unix(), "ath": base64.RawURLEncoding.EncodeToString(sum[:])})
	orig := request.Original{Method: "GET", Scheme: "https", Host: "api.example", Path: "/"}
	return dpop.Input{Proofs: []string{p}, Request: orig, AccessToken: tok, JKT: k.Thumbprint, Issuer: "https://idp.example/", Leeway: 5 * time.Second}
}

// TestReloadDPoPOffThenRaisedKeepsReplays: dpop at max_age 10s, a reload
// without dpop (the replay store is kept), then one with max_age 60s: the
// proof used under 10s, its entry gone, must still be refused (the middle
// generation had no checker, so the last one had nothing to replace).
func TestReloadDPoPOffThenRaisedKeepsReplays(t *testing.T) {
	jwksSrv := jwksServer(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	load := func(d string) *config.Plan {
		t.Helper()
		sc := ""
		if d != "" {
			sc = "    sender_constraint: {dpop: optional}\n"
		}
		return writePlan(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
%sissuers:
  - issuer: https://idp.example/
    jwks_url: %s
    leeway: 5s
%s`, d, jwksSrv.URL, sc))
	}
	l := startLive(t, load("dpop: {replay_store: memory, max_age: 10s}\n"))
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	used := dpopInput(t, "used", now)
	if _, err := l.cur.Load().server.DPoP().Check(ctx, used, now); err != nil {
		t.Fatal(err)
	}
	store := l.replayStore
	mustReload(t, l, ctx, load(""))
	mustReload(t, l, ctx, load("dpop: {replay_store: memory, max_age: 60s}\n"))
	if l.replayStore != store {
		t.Fatal("another store")
	}
	if _, err := l.cur.Load().server.DPoP().Check(ctx, used, now.Add(30*time.Second)); err == nil {
		t.Error("dpop off then on with a larger max_age: the proof used before is accepted again")
	}
}
