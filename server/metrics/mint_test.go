package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/verify"
)

// TestUseMinter: the minting metrics report the minter UseMinter gives,
// and are left out without one.
func TestUseMinter(t *testing.T) {
	e := newEnv(t, envConfig{})
	if body := get(e.m.Handler(), "/metrics").Body.String(); strings.Contains(body, "jwksverify_mint_") {
		t.Error("/metrics has minting metrics without a minter")
	}
	path := filepath.Join(t.TempDir(), "mint.jwks")
	if err := os.WriteFile(path, testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.Ed25519A), Kid: "k1"}), 0o600); err != nil {
		t.Fatal(err)
	}
	mt, err := mint.New(mint.Options{Issuer: "https://jwksverify.internal", KeysFile: path, SigningKid: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	defer mt.Close()
	p, _ := mint.NewPolicy(mint.PolicySpec{Audience: "a"})
	src := &verify.Result{Claims: json.RawMessage(`{"sub":"alice"}`)}
	now := time.Now()
	for range 3 {
		if _, err := mt.Mint("tok", src, p, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, []byte(`{"keys":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _ = mt.Reload()
	e.m.UseMinter(mt)
	body := get(e.m.Handler(), "/metrics").Body.String()
	for _, line := range []string{
		`jwksverify_mint_tokens_total{result="minted"} 1`,
		`jwksverify_mint_tokens_total{result="reused"} 2`,
		`jwksverify_mint_keys_reloads_total{result="failure"} 1`,
		`jwksverify_mint_keys_reloads_total{result="success"} 0`,
		`jwksverify_mint_cache_entries 1`,
		`jwksverify_mint_keys_last_reload_successful 0`,
	} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	// The file holds the signing keys again: the refusal is over.
	if err := os.WriteFile(path, testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.Ed25519A), Kid: "k1"}), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _ = mt.Reload()
	if body := get(e.m.Handler(), "/metrics").Body.String(); !strings.Contains(body, "jwksverify_mint_keys_last_reload_successful 1") {
		t.Error("/metrics lacks jwksverify_mint_keys_last_reload_successful 1 once the file holds the signing keys again")
	}
}
