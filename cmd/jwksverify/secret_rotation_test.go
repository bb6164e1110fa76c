package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/service"
)

// TestSecretFileRotationIsApplied: an HMAC secret_file is read when the
// configuration loads, so the watcher must load the configuration again
// when that file changes, as it does when the configuration file itself
// changes. A leaked secret is rotated by writing a new one into the file
// (a Kubernetes Secret), with or without a new secret_kid in the
// configuration (a ConfigMap, updated independently of the Secret, here
// first): either way the old secret must stop verifying, without a
// SIGHUP nobody sends.
func TestSecretFileRotationIsApplied(t *testing.T) {
	oldSecret := bytes.Repeat([]byte("o"), 32)
	newSecret := bytes.Repeat([]byte("n"), 32)
	tests := []struct {
		name        string
		kidAfter    string // the configuration's secret_kid once rotated
		configFirst bool   // the configuration changes first, then the secret
	}{
		{"secret-only", "k1", false},
		{"config-first", "k2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeAtomic := func(path string, b []byte) {
				t.Helper()
				if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(path+".tmp", path); err != nil {
					t.Fatal(err)
				}
			}
			secret := filepath.Join(dir, "hmac.key")
			writeAtomic(secret, oldSecret)
			doc := func(kid string) []byte {
				return []byte("listen: 127.0.0.1:0\nissuers:\n  - issuer: https://a.test/\n    secret_file: hmac.key\n    secret_kid: " +
					kid + "\n    audiences: [api]\n")
			}
			cfg := filepath.Join(dir, "cfg.yaml")
			writeAtomic(cfg, doc("k1"))
			load := func() (*config.Plan, error) {
				return config.Load(cfg, config.Overrides{}, func(string) (string, bool) { return "", false })
			}
			plan, err := load()
			if err != nil {
				t.Fatal(err)
			}
			logs := &testlog.Buffer{}
			logger := slog.New(slog.NewTextHandler(logs, nil))
			svc, err := service.New(plan, service.Options{Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); watch(ctx, svc, cfg, load, nil, logger) }()
			defer func() { cancel(); <-done }()

			now := time.Now()
			token := func(key []byte, kid string) string {
				return testkeys.Mint("HS256", key, map[string]any{"kid": kid}, map[string]any{
					"iss": "https://a.test/", "aud": "api", "sub": "alice", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
			}
			valid := func(tok string) bool {
				_, err := svc.Server().Verifier().Verify(context.Background(), tok)
				return err == nil
			}
			waitFor := func(what string, cond func() bool) bool {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for !cond() {
					if time.Now().After(deadline) {
						t.Errorf("after 10 s: %s", what)
						return false
					}
					time.Sleep(50 * time.Millisecond)
				}
				return true
			}
			leaked := token(oldSecret, tt.kidAfter)
			if tt.configFirst {
				writeAtomic(cfg, doc(tt.kidAfter))
				if !waitFor("the configuration change was not applied", func() bool { return valid(leaked) }) {
					t.FailNow()
				}
			} else if !valid(leaked) {
				t.Fatal("the first secret does not verify")
			}
			writeAtomic(secret, newSecret)
			waitFor("the rotated-away secret still verifies, the new one does not", func() bool {
				return !valid(leaked) && valid(token(newSecret, tt.kidAfter))
			})
			// A secret the load refuses (too short) is reported once, and
			// the running one keeps verifying.
			writeAtomic(secret, []byte("short"))
			failed := func() int { return strings.Count(logs.String(), "configuration reload failed") }
			waitFor("the refused secret was not tried", func() bool { return failed() > 0 })
			time.Sleep(2500 * time.Millisecond) // two more polls
			if n := failed(); n != 1 {
				t.Errorf("a refused secret was reported %d times, want once", n)
			}
			if !valid(token(newSecret, tt.kidAfter)) {
				t.Error("after a refused secret, the running one no longer verifies")
			}
			if t.Failed() {
				t.Logf("logs:\n%s", logs.String())
			}
		})
	}
}
