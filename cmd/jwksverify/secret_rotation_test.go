package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
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
			secret := filepath.Join(dir, "hmac.key")
			writeAtomic(t, secret, oldSecret)
			doc := func(kid string) []byte {
				return []byte("listen: 127.0.0.1:0\nissuers:\n  - issuer: https://a.test/\n    secret_file: hmac.key\n    secret_kid: " +
					kid + "\n    audiences: [api]\n")
			}
			cfg := filepath.Join(dir, "cfg.yaml")
			writeAtomic(t, cfg, doc("k1"))
			svc, logs := watchedService(t, cfg)

			now := time.Now()
			token := func(key []byte, kid string) string {
				return testkeys.Mint("HS256", key, map[string]any{"kid": kid}, map[string]any{
					"iss": "https://a.test/", "aud": "api", "sub": "alice", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
			}
			valid := func(tok string) bool {
				_, err := svc.Server().Verifier().Verify(context.Background(), tok)
				return err == nil
			}
			leaked := token(oldSecret, tt.kidAfter)
			if tt.configFirst {
				writeAtomic(t, cfg, doc(tt.kidAfter))
				if !waitFor(t, "the configuration change was not applied", func() bool { return valid(leaked) }) {
					t.FailNow()
				}
			} else if !valid(leaked) {
				t.Fatal("the first secret does not verify")
			}
			writeAtomic(t, secret, newSecret)
			waitFor(t, "the rotated-away secret still verifies, the new one does not", func() bool {
				return !valid(leaked) && valid(token(newSecret, tt.kidAfter))
			})
			// A secret the load refuses (too short) is reported once, and
			// the running one keeps verifying.
			writeAtomic(t, secret, []byte("short"))
			failed := func() int { return strings.Count(logs.String(), "configuration reload failed") }
			waitFor(t, "the refused secret was not tried", func() bool { return failed() > 0 })
			time.Sleep(2500 * time.Millisecond) // two more polls
			if n := failed(); n != 1 {
				t.Errorf("a refused secret was reported %d times, want once", n)
			}
			if !valid(token(newSecret, tt.kidAfter)) {
				t.Error("after a refused secret, the running one no longer verifies")
			}
		})
	}
}
