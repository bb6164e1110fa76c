package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/verify"
)

// parsePlan plans a configuration document whose relative paths are
// relative to dir.
func parsePlan(t *testing.T, dir, doc string) *config.Plan {
	t.Helper()
	p, err := config.Parse([]byte(doc), dir, config.Overrides{}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config.Parse() = %v", err)
	}
	return p
}

// memoryRevocationPlan is the plan of one issuer, https://a.example/
// (audience orders), whose keys are testJWKS in a jwks_file, with the
// memory revocation store in dir, its state_dir.
func memoryRevocationPlan(t *testing.T, dir string) *config.Plan {
	t.Helper()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	return parsePlan(t, dir, `state_dir: `+dir+`
revocation: {store: memory}
issuers:
  - issuer: https://a.example/
    jwks_file: `+jwksFile+`
    audiences: [orders]
`)
}

// TestReloadReusesUnchangedIssuers: a reload keeps the fetcher of every
// issuer whose key source did not change (its keys, no refetch) and
// replaces the others; the replaced ones stop fetching at the swap and are
// closed once retired; a plan
// that does not build leaves the running generation serving.
func TestReloadReusesUnchangedIssuers(t *testing.T) {
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(testJWKS()) }))
	t.Cleanup(idp.Close)
	doc := func(staleFor string) string {
		return fmt.Sprintf(`issuers:
  - issuer: https://a.example/
    jwks_url: %s
  - issuer: https://b.example/
    jwks_url: %s
    refresh: {stale_for: %s}
`, idp.URL, idp.URL, staleFor)
	}
	l := startLive(t, parsePlan(t, "", doc("1h")))
	if err := l.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := l.cur.Load().fetchers
	mustReload(t, l, context.Background(), parsePlan(t, "", doc("2h")))
	after := l.cur.Load().fetchers
	if after[0].f != before[0].f {
		t.Errorf("unchanged issuer a: fetcher replaced, want kept")
	}
	if after[1].f == before[1].f {
		t.Errorf("changed issuer b: fetcher kept, want replaced")
	}
	// Replaced, it fetches no more at once (before the write-timeout grace
	// closes it): an unknown kid is not refreshed.
	if err := before[1].f.RefreshUnknownKid(context.Background(), "absent"); !errors.Is(err, jwks.ErrRetired) {
		t.Errorf("replaced fetcher before the grace: RefreshUnknownKid() = %v, want %v", err, jwks.ErrRetired)
	}

	// A plan the verifier refuses (an issuer listed twice) is not swapped in.
	bad := parsePlan(t, "", doc("2h"))
	bad.Issuers = append(bad.Issuers, bad.Issuers[0])
	if err := l.Reload(context.Background(), bad); err == nil {
		t.Fatalf("Reload(duplicate issuer) = nil, want an error")
	}
	if got := l.cur.Load().fetchers; len(got) != 2 || got[0].f != after[0].f {
		t.Errorf("after a failed reload: %d fetchers, want the running generation's 2", len(got))
	}
	tok := mintRS256(claimsAt("https://b.example/", "", time.Now()))
	if _, err := l.Server().Verifier().Verify(context.Background(), tok); err != nil {
		t.Errorf("after a failed reload: Verify() = %v, want valid", err)
	}

	l.Close() // ends the retirement grace at once
	if err := before[1].f.RefreshUnknownKid(context.Background(), "absent"); !errors.Is(err, jwks.ErrClosed) {
		t.Errorf("replaced fetcher after Close: RefreshUnknownKid() = %v, want %v", err, jwks.ErrClosed)
	}
}

// TestCheck: Check refuses what New would refuse, one error per problem,
// and starts nothing (TestMain's goleak holds it to that).
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		doc  string
		want []string // one problem each, in order
	}{
		{"sound", "issuers: [{issuer: https://a.example/, jwks_url: https://a.example/jwks}]\n", nil},
		{"redis-never-dialled", "dpop: {replay_store: redis, redis_url: \"redis://127.0.0.1:1\"}\n" +
			"issuers: [{issuer: https://a.example/, jwks_file: jwks.json, sender_constraint: {dpop: required}}]\n", nil},
		{"missing-ca-file", "issuers: [{issuer: https://a.example/, jwks_url: https://a.example/jwks, ca_file: missing.pem}]\n",
			[]string{"issuers[0] (https://a.example/): ca_file: "}},
		{"state-dir-and-ca-file", "state_dir: file/sub\nissuers:\n" +
			"  - {issuer: https://a.example/, jwks_url: https://a.example/jwks, ca_file: missing.pem}\n" +
			"  - {issuer: https://b.example/, jwks_url: https://b.example/jwks, ca_file: jwks.json}\n",
			[]string{"state_dir ", "issuers[0] (https://a.example/): ca_file: ", "issuers[1] (https://b.example/): ca_file: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(parsePlan(t, dir, tt.doc), Options{Logger: slog.New(slog.DiscardHandler)})
			var got []error
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				got = j.Unwrap()
			} else if err != nil {
				got = []error{err}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Check() = %v, want %d problems %q", err, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i].Error(), w) {
					t.Errorf("Check() problem %d = %v, want %q", i, got[i], w)
				}
			}
		})
	}
	// What verify refuses is Check's problem too.
	p := parsePlan(t, dir, "issuers: [{issuer: https://a.example/, jwks_file: jwks.json}]\n")
	p.Issuers = append(p.Issuers, p.Issuers[0])
	if err := Check(p, Options{}); err == nil || errors.Is(err, verify.ErrRejected) {
		t.Errorf("Check(duplicate issuer) = %v, want the verifier's refusal", err)
	}
}

// TestNewRefusedLeavesNothing: a plan that New refuses after it started
// some parts (its fetchers) closes them (TestMain's
// goleak holds it to that).
func TestNewRefusedLeavesNothing(t *testing.T) {
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(testJWKS()) }))
	t.Cleanup(idp.Close)
	p := parsePlan(t, "", fmt.Sprintf(`dpop: {replay_store: redis, redis_url: "redis://127.0.0.1:1"}
issuers:
  - issuer: https://a.example/
    jwks_url: %s
    sender_constraint: {dpop: optional}
`, idp.URL))
	p.Issuers = append(p.Issuers, p.Issuers[0]) // verify refuses an issuer listed twice
	if s, err := New(p, Options{Logger: slog.New(slog.DiscardHandler)}); err == nil {
		s.Close()
		t.Fatal("New(duplicate issuer) = nil error, want the verifier's refusal")
	}
}
