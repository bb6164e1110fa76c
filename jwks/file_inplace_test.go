package jwks

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/filestamp"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// A key file rewritten in place with content of the same length and its
// old modification time put back (cp -p, rsync --inplace -t, an editor
// that keeps times) is a change: its identity, size and mtime are the
// same, but its content, and its ctime, are not. A P-256 key rotated under
// the same kid (or any kid of the same length) keeps the document's length
// exactly; the removed key must stop verifying.
func TestFileRewrittenInPlaceWithItsMtimeIsReloaded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "keys.json")
		oldKey := testkeys.JWK{Key: testkeys.Public(testkeys.EC256A), Kid: "k1", Alg: "ES256", Use: "sig"}
		newKey := testkeys.JWK{Key: testkeys.Public(testkeys.EC256B), Kid: "k1", Alg: "ES256", Use: "sig"}
		before, after := testkeys.JWKS(oldKey), testkeys.JWKS(newKey)
		if len(before) != len(after) {
			t.Fatalf("test documents of %d and %d bytes, want the same length", len(before), len(after))
		}
		if err := os.WriteFile(file, before, 0o600); err != nil {
			t.Fatal(err)
		}
		mtime := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := os.Chtimes(file, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		clk := newBubbleClock()
		f, d := startFetcher(t, clk, Options{Issuer: "https://file.test/", File: file, FilePollInterval: time.Second})
		old, ok := f.Keys().Load().Lookup("k1")
		if !ok {
			t.Fatal("the first file was not loaded")
		}

		// Rewritten in place (same inode: O_TRUNC), then its mtime put back;
		// again while the kernel's coarse clock still gives the ctime of the
		// first write (the bubble's clock is not the file system's).
		fi0, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			fh, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fh.Write(after); err != nil {
				t.Fatal(err)
			}
			if err := fh.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(file, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			if !filestamp.Same(fi, fi0) || i == 1e6 {
				break
			}
		}
		for range 3 {
			d = clk.step(t, d)
		}
		k, ok := f.Keys().Load().Lookup("k1")
		if !ok || k.Thumbprint == old.Thumbprint {
			t.Fatalf("after the file was rewritten, kid k1 is still the removed key (thumbprint %s): it keeps verifying, for good (a file's keys never go stale)", old.Thumbprint)
		}
	})
}
