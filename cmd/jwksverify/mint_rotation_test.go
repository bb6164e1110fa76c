package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// TestMintEmergencyRotationConfigFirst: OPERATIONS' emergency rotation
// ("write a file without the leaked key and with a new one as
// signing_kid, both changes in one reload") when the configuration's new
// signing_kid is seen before the new keys file (a ConfigMap and a Secret
// are updated independently, in either order). The configuration reload
// fails (k2 not yet in the file) and is never tried again; the keys file
// without k1 is then refused by the running minter (its signing_kid k1 is
// gone): the removed, leaked key keeps signing and stays published for
// good.
func TestMintEmergencyRotationConfigFirst(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	k1 := testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "k1"}
	k2 := testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "k2"}
	keys := filepath.Join(dir, "mint.jwks")
	writeAtomic := func(path string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	writeAtomic(keys, testkeys.PrivateJWKS(k1))
	doc := func(kid string) []byte {
		return []byte("listen: 127.0.0.1:0\nmint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: " + kid + "}\n" +
			"policies:\n  - name: p\n    mint: {audience: a}\nissuers:\n  - issuer: https://a.test/\n    jwks_file: jwks.json\n    audiences: [api]\n")
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

	published := func() string {
		rec := httptest.NewRecorder()
		svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/jwks.json", nil))
		return rec.Body.String()
	}
	waitFor := func(what string, cond func() bool) bool {
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

	// Step 1: the configuration names the new signing key first.
	writeAtomic(cfg, doc("k2"))
	if !waitFor("the configuration change was not tried", func() bool { return strings.Contains(logs.String(), "configuration reload failed") }) {
		t.FailNow()
	}
	// Step 2: the keys file without the leaked key, with the new one.
	writeAtomic(keys, testkeys.PrivateJWKS(k2))
	// Both files now agree: k1 is removed, k2 signs.
	waitFor(`the removed key k1 is still published (and signs): `+published(), func() bool {
		return !strings.Contains(published(), `"k1"`) && strings.Contains(published(), `"k2"`)
	})
	if t.Failed() {
		t.Logf("logs:\n%s", logs.String())
	}
}
