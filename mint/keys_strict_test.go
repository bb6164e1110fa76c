package mint

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// withMember returns the private JWKS of k with member name set to v.
func withMember(t *testing.T, k testkeys.JWK, name string, v any) []byte {
	t.Helper()
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(testkeys.PrivateJWKS(k), &doc); err != nil {
		t.Fatal(err)
	}
	doc.Keys[0][name] = v
	b, _ := json.Marshal(doc)
	return b
}

func TestKeyOpsForbidSigning(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  []byte
	}{
		{"verify-only", withMember(t, ecA, "key_ops", []string{"verify"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.jwks")
			if err := os.WriteFile(path, tc.doc, 0o600); err != nil {
				t.Fatal(err)
			}
			err := Check(Options{Issuer: "i", KeysFile: path, SigningKid: "k1"})
			if !errors.Is(err, ErrKeysFile) {
				t.Fatalf("Check() = %v; want ErrKeysFile: the signing key's key_ops forbid signing", err)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "key_ops") {
				t.Errorf("error does not name key_ops: %v", err)
			}
		})
	}
}

// TestKeysFileTrailingData: parseKeys says it refuses "data after the
// JSON object", but json.Decoder.More reports false before a '}' or ']':
// a keys file with a stray closing bracket after the JWKS is taken.
func TestKeysFileTrailingData(t *testing.T) {
	good := testkeys.PrivateJWKS(ecA)
	for _, tail := range []string{"}", "]", " ]]}"} {
		t.Run(tail, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.jwks")
			if err := os.WriteFile(path, append(append([]byte{}, good...), tail...), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := Check(Options{Issuer: "i", KeysFile: path, SigningKid: "k1"}); !errors.Is(err, ErrKeysFile) {
				t.Errorf("Check(JWKS + %q) = %v; want ErrKeysFile (data after the JSON object)", tail, err)
			}
		})
	}
}

// TestRotateUnderLoad: tokens minted while the keys file rotates verify
// under the JWKS of the keys that minted them; after the rotation no token
// carries the removed key.
func TestRotateUnderLoad(t *testing.T) {
	path := keysFile(t, ecA)
	m := newMinter(t, Options{KeysFile: path, SigningKid: "k1"})
	p, _ := NewPolicy(PolicySpec{Audience: "a"})
	src := source(map[string]any{"sub": "x", "exp": t0.Add(time.Hour).Unix()})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := m.Mint("tok", src, p, t0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 20 {
		if i%2 == 0 {
			writeKeys(t, path, testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "k1"})
		} else {
			writeKeys(t, path, ecA)
		}
		if _, err := m.Reload(); err != nil {
			t.Fatal(err)
		}
		tok, _ := m.Mint("tok", src, p, t0)
		parse(t, m, tok.JWT)
	}
	close(stop)
	wg.Wait()
}
