package service

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/mint"
)

// TestReloadMinter: a reload whose mint section is the same keeps the
// minter (its cache) and reads the keys file again; a changed signing_kid
// builds a new one; a keys file that is refused fails the reload and the
// running minter keeps its keys; Check refuses it too.
func TestReloadMinter(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "mint.jwks")
	writeKeys := func(doc []byte) {
		t.Helper()
		if err := os.WriteFile(keys, doc, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k1 := testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "k1"}
	k2 := testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "k2"}
	writeKeys(testkeys.PrivateJWKS(k1, k2))
	jwks := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwks, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := func(kid string) string {
		return "listen: 127.0.0.1:0\nmint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: " + kid + "}\n" +
			"policies:\n  - name: p\n    mint: {audience: a}\nissuers:\n  - issuer: https://idp.example.com/\n    jwks_file: jwks.json\n"
	}
	cfg := filepath.Join(dir, "config.yaml")
	l := startLive(t, writePlan(t, cfg, doc("k1")))
	first := l.cur.Load().minter
	if first == nil {
		t.Fatal("no minter")
	}

	t.Run("same-section-keeps-the-minter", func(t *testing.T) {
		mustReload(t, l, t.Context(), writePlan(t, cfg, doc("k1")+"# a comment\n"))
		if l.cur.Load().minter != first {
			t.Error("a reload with the same mint section built a new minter")
		}
	})
	t.Run("signing-kid-changed", func(t *testing.T) {
		mustReload(t, l, t.Context(), writePlan(t, cfg, doc("k2")))
		if _, signing := l.cur.Load().minter.Kids(); signing != "k2" {
			t.Errorf("signing kid = %s, want k2", signing)
		}
	})
	t.Run("refused-keys-file-fails-the-reload", func(t *testing.T) {
		before := l.cur.Load().minter
		writeKeys(testkeys.PrivateJWKS(k1)) // k2, the signing key, is gone
		err := l.Reload(t.Context(), writePlan(t, cfg, doc("k2")+"# another\n"))
		if !errors.Is(err, mint.ErrKeysFile) || !strings.Contains(err.Error(), "mint.keys_file") {
			t.Fatalf("Reload() = %v, want a refusal naming mint.keys_file", err)
		}
		if l.cur.Load().minter != before || !strings.Contains(string(before.JWKS()), `"k2"`) {
			t.Error("a refused keys file changed the running minter")
		}
		plan, perr := config.Load(cfg, config.Overrides{}, func(string) (string, bool) { return "", false })
		if perr != nil {
			t.Fatal(perr)
		}
		if err := Check(plan, Options{}); !errors.Is(err, mint.ErrKeysFile) {
			t.Errorf("Check() = %v, want ErrKeysFile", err)
		}
	})
}
