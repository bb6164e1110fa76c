package mint

import (
	"errors"
	"os"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestReloadOfUnchangedContentDoesNotParseIt: the watch reads the keys
// file every second; a content it already holds, or already refused, is
// told by its SHA-256 and not parsed again. Parsing checks every key
// (jwkset's RSA validation, a test signature by each private key): with a
// few RSA keys that was milliseconds of CPU every second for as long as
// the process ran (~13 ms for RSA-4096, -3072, -2048; MaxKeys keys of
// RSA-4096 most of a core). Allocations count the work done, without a
// clock: a read and a hash are a few dozen, a parse a thousand.
func TestReloadOfUnchangedContentDoesNotParseIt(t *testing.T) {
	keys := []testkeys.JWK{{Key: testkeys.Private(testkeys.RSA4096), Kid: "a"}, {Key: testkeys.Private(testkeys.RSA2048A), Kid: "b"}}
	path := keysFile(t, keys...)
	m := newMinter(t, Options{KeysFile: path, SigningKid: "a"})
	const most = 100
	if n := testing.AllocsPerRun(3, func() {
		if changed, err := m.Reload(); changed || err != nil {
			t.Fatalf("Reload() = %v, %v", changed, err)
		}
	}); n > most {
		t.Errorf("a Reload of the content in use made %.0f allocations, want at most %d: it parsed the file again", n, most)
	}

	// A refused content: refused again each time (the error returned),
	// without being parsed again.
	if err := os.WriteFile(path, testkeys.PrivateJWKS(keys[1]), 0o600); err != nil { // no key "a"
		t.Fatal(err)
	}
	if _, err := m.Reload(); !errors.Is(err, ErrKeysFile) {
		t.Fatalf("Reload() of a file without the signing key = %v, want ErrKeysFile", err)
	}
	if n := testing.AllocsPerRun(3, func() {
		if _, err := m.Reload(); !errors.Is(err, ErrKeysFile) {
			t.Fatalf("Reload() again = %v, want ErrKeysFile", err)
		}
	}); n > most {
		t.Errorf("a Reload of the content refused before made %.0f allocations, want at most %d: it parsed the file again", n, most)
	}
	if _, signing := m.Kids(); signing != "a" {
		t.Errorf("signing kid = %q after refused contents, want a", signing)
	}
}
