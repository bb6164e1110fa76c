package service

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/redisconn"
)

// TestMain fails the package when a test leaves a goroutine behind: a
// Service owns every goroutine it starts, and Close waits for them.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testJWKS is a JWKS document with the RS256 and ES256 test keys.
func testJWKS() []byte {
	return testkeys.JWKS(
		testkeys.JWK{Key: testkeys.Private(testkeys.RSA2048A), Kid: "rsa-a", Alg: "RS256", Use: "sig"},
		testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "ec-a", Alg: "ES256", Use: "sig"},
	)
}

// mintRS256 mints an RS256 token under kid rsa-a with claims.
func mintRS256(claims map[string]any) string {
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a"}, claims)
}

// claimsAt returns claims for iss/aud valid for an hour around at.
func claimsAt(iss, aud string, at time.Time) map[string]any {
	return map[string]any{
		"iss": iss, "aud": aud, "sub": "alice",
		"iat": at.Unix(), "nbf": at.Unix(), "exp": at.Add(time.Hour).Unix(),
	}
}

func tokenBody(tok string) string { return `{"token":"` + tok + `"}` }

// mustReload reloads l with next and fails the test when it is refused.
func mustReload(t *testing.T, l *Service, ctx context.Context, next *config.Plan) {
	t.Helper()
	if err := l.Reload(ctx, next); err != nil {
		t.Fatalf("Reload() = %v", err)
	}
}

// TestRestartNeeded: a reload names each setting it cannot apply (the
// listeners, the HTTP server's timeouts, the log) and nothing else.
func TestRestartNeeded(t *testing.T) {
	cur := &config.Plan{Listen: "127.0.0.1:8080", LogLevel: slog.LevelInfo, LogFormat: "json", ShutdownTimeout: time.Second}
	tests := []struct {
		name   string
		change func(*config.Plan)
		want   []string
	}{
		{"nothing", func(*config.Plan) {}, nil},
		{"shutdown-applies", func(p *config.Plan) { p.ShutdownTimeout = time.Minute }, nil},
		{"listen", func(p *config.Plan) { p.Listen = "127.0.0.1:9090" }, []string{"listen"}},
		{"grpc", func(p *config.Plan) { p.GRPCListen = "127.0.0.1:9091" }, []string{"grpc_listen"}},
		{"tls", func(p *config.Plan) { p.TLS.ClientAuth = "require" }, []string{"tls"}},
		{"timeouts", func(p *config.Plan) { p.HTTP.Write = time.Minute }, []string{"HTTP server timeouts (derived from the issuers' refresh waits)"}},
		{"log", func(p *config.Plan) { p.LogLevel, p.LogFormat = slog.LevelDebug, "text" }, []string{"log.level", "log.format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := *cur
			tt.change(&next)
			if got := restartNeeded(cur, &next); !slices.Equal(got, tt.want) {
				t.Errorf("restartNeeded() = %q, want %q", got, tt.want)
			}
		})
	}
}

// mintKeysDir is a new directory holding jwks.json (testJWKS, the issuers'
// keys) and mint.jwks (the private key "k1", EC P-256, for mint.keys_file).
func mintKeysDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jwks.json"), testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	k1 := testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "k1"}
	if err := os.WriteFile(filepath.Join(dir, "mint.jwks"), testkeys.PrivateJWKS(k1), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSameRevocation: a reload keeps the revocation store only when the
// revocation section is the same and, for store: redis, so is the redis
// section; any other change is one restartNeeded names.
func TestSameRevocation(t *testing.T) {
	mem := &config.Revocation{Store: "memory", Retention: time.Hour, StateDir: "/s"}
	red := &config.Revocation{Store: "redis", Retention: time.Hour, MaxStaleness: time.Second}
	r1 := &redisconn.Options{URL: "redis://127.0.0.1:6379"}
	r2 := &redisconn.Options{URL: "redis://127.0.0.1:6380"}
	tests := []struct {
		name      string
		cur, next *config.Plan
		same      bool
	}{
		{"none", &config.Plan{}, &config.Plan{}, true},
		{"turned-on", &config.Plan{}, &config.Plan{Revocation: mem}, false},
		{"memory-equal", &config.Plan{Revocation: mem}, &config.Plan{Revocation: &config.Revocation{Store: "memory", Retention: time.Hour, StateDir: "/s"}}, true},
		{"memory-retention", &config.Plan{Revocation: mem}, &config.Plan{Revocation: &config.Revocation{Store: "memory", Retention: 2 * time.Hour, StateDir: "/s"}}, false},
		{"redis-equal", &config.Plan{Revocation: red, Redis: r1}, &config.Plan{Revocation: red, Redis: &redisconn.Options{URL: r1.URL}}, true},
		{"redis-moved", &config.Plan{Revocation: red, Redis: r1}, &config.Plan{Revocation: red, Redis: r2}, false},
		{"redis-gone", &config.Plan{Revocation: red, Redis: r1}, &config.Plan{Revocation: red}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameRevocation(tt.cur, tt.next); got != tt.same {
				t.Errorf("sameRevocation() = %v, want %v", got, tt.same)
			}
		})
	}
}
