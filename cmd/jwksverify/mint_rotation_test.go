package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
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
	writeAtomic(t, keys, testkeys.PrivateJWKS(k1))
	doc := func(kid string) []byte {
		return []byte("listen: 127.0.0.1:0\nmint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: " + kid + "}\n" +
			"policies:\n  - name: p\n    mint: {audience: a}\nissuers:\n  - issuer: https://a.test/\n    jwks_file: jwks.json\n    audiences: [api]\n")
	}
	cfg := filepath.Join(dir, "cfg.yaml")
	writeAtomic(t, cfg, doc("k1"))
	svc, logs := watchedService(t, cfg)

	published := func() string {
		rec := httptest.NewRecorder()
		svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/jwks.json", nil))
		return rec.Body.String()
	}
	// Step 1: the configuration names the new signing key first.
	writeAtomic(t, cfg, doc("k2"))
	if !waitFor(t, "the configuration change was not tried", func() bool { return strings.Contains(logs.String(), "configuration reload failed") }) {
		t.FailNow()
	}
	// Step 2: the keys file without the leaked key, with the new one.
	writeAtomic(t, keys, testkeys.PrivateJWKS(k2))
	// Both files now agree: k1 is removed, k2 signs.
	waitFor(t, `the removed key k1 is still published (and signs): `+published(), func() bool {
		return !strings.Contains(published(), `"k1"`) && strings.Contains(published(), `"k2"`)
	})
}
