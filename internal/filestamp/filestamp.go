// Package filestamp tells whether a file watched by polling has changed,
// without reading it: one rule for every file jwksverify reads again when
// it changes (a jwks_file, an issuer's ca_file, the TLS files, a Redis
// password file).
//
// A file's size and modification time are not enough. The modification
// time can be set back (cp -p, rsync -t, touch -r), and a file rewritten
// in place with content of the same length (a P-256 key rotated under a
// kid of the same length, a password of the same length) and its old
// modification time put back looked unchanged for good. Every write moves
// the status change time (ctime), and nothing sets it back; a file
// replaced by another (a Kubernetes volume's symlink swap, a rename) is
// another file.
package filestamp

import (
	"os"
	"time"
)

// Stamp is what a poll compares of a file. The zero Stamp is no file (one
// that could not be looked at): it equals only another zero Stamp. Compare
// stamps with Equal, not ==.
type Stamp struct {
	fi    os.FileInfo
	size  int64
	mod   time.Time
	ctime time.Time // zero where the platform has none at hand
}

// Of returns fi's stamp.
func Of(fi os.FileInfo) Stamp {
	c, _ := changeTime(fi)
	return Stamp{fi: fi, size: fi.Size(), mod: fi.ModTime(), ctime: c}
}

// Stat returns the stamp of the file at path (after symbolic links).
func Stat(path string) (Stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{}, err
	}
	return Of(fi), nil
}

// Equal reports whether s and t stamp the same content of one file: the
// same file (os.SameFile), size, modification time and status change
// time; or both no file.
func (s Stamp) Equal(t Stamp) bool {
	if s.fi == nil || t.fi == nil {
		return s.fi == nil && t.fi == nil
	}
	return os.SameFile(s.fi, t.fi) && s.size == t.size && s.mod.Equal(t.mod) && s.ctime.Equal(t.ctime)
}

// Same reports whether a and b describe the same content of one file
// (Of(a).Equal(Of(b))).
func Same(a, b os.FileInfo) bool { return Of(a).Equal(Of(b)) }
