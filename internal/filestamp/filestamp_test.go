package filestamp

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// rewriteKeepingMtime writes content into path in place (same file, same
// length), puts its old modification time back, and repeats until the
// status change time moved (a coarse file-system clock may give the first
// write the time of the last one). It returns the file's stamp.
func rewriteKeepingMtime(t *testing.T, path string, content []byte, before Stamp) Stamp {
	t.Helper()
	mtime := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; ; i++ {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		st, err := Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Equal(before) || i == 100000 {
			return st
		}
	}
}

func TestStamp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys")
	mtime := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.WriteFile(path, []byte("key-one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	first, err := Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Stat(path)
	if !first.Equal(again) {
		t.Error("an unchanged file's stamps differ")
	}

	t.Run("rewritten-in-place-old-mtime", func(t *testing.T) {
		// cp -p, rsync -t, touch -r: same file, same length, same mtime.
		if st := rewriteKeepingMtime(t, path, []byte("key-two"), first); st.Equal(first) {
			t.Error("a file rewritten in place with content of the same length and its old mtime put back has the same stamp: it is never read again")
		}
	})
	t.Run("replaced", func(t *testing.T) {
		// A rename over it (a Kubernetes volume's symlink swap): another file.
		before, _ := Stat(path)
		other := filepath.Join(dir, "new")
		if err := os.WriteFile(other, []byte("key-3x3"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(other, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(other, path); err != nil {
			t.Fatal(err)
		}
		if st, _ := Stat(path); st.Equal(before) {
			t.Error("a file replaced by another of the same length and mtime has the same stamp")
		}
	})
	t.Run("no-file", func(t *testing.T) {
		missing, err := Stat(filepath.Join(dir, "missing"))
		if err == nil {
			t.Fatal("Stat(a missing file) = nil error")
		}
		if !missing.Equal(Stamp{}) || missing.Equal(first) || first.Equal(Stamp{}) {
			t.Error("the zero Stamp must equal only itself")
		}
	})
}
