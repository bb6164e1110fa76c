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
	const tok = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"
	k, err := cache.NewKey(testkeys.Public(testkeys.EC256A), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(tok))
	orig := request.Original{Method: "GET", Scheme: "https", Host: "api.example", Path: "/"}
	in := func(jti string, iat time.Time) dpop.Input {
		p := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A),
			map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256A)})},
			map[string]any{"jti": jti, "htm": "GET", "htu": "https://api.example/", "iat": iat.Unix(), "ath": base64.RawURLEncoding.EncodeToString(sum[:])})
		return dpop.Input{Proofs: []string{p}, Request: orig, AccessToken: tok, JKT: k.Thumbprint, Issuer: "https://idp.example/", Leeway: 5 * time.Second}
	}
	now := time.Now().Truncate(time.Second)
	used := in("used-before", now)
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
	if _, err := c.Check(ctx, in("issued-after", late), late.Add(40*time.Second)); err != nil {
		t.Errorf("a proof issued after the reload, 40s old under max_age 60s: %v", err)
	}
}
