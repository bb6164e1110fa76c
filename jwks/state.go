package jwks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// stateFile is what StateDir holds per issuer: the last good JWKS with its
// validators and the time it was last confirmed by the source.
type stateFile struct {
	Issuer       string          `json:"issuer"`
	Source       string          `json:"source"`
	FetchedAt    time.Time       `json:"fetched_at"`
	ETag         string          `json:"etag,omitempty"`
	LastModified string          `json:"last_modified,omitempty"`
	JWKS         json.RawMessage `json:"jwks"`
}

// statePath names the state file of an issuer (or, without issuer, of a
// source): <dir>/<first 16 hex digits of sha256>.json.
func statePath(dir, issuer, source string) string {
	name := issuer
	if name == "" {
		name = source
	}
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(dir, hex.EncodeToString(sum[:])[:16]+".json")
}

// readState reads and decodes a state file, bounded by limit bytes of JWKS.
func readState(path string, limit int64) (stateFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return stateFile{}, err
	}
	defer fh.Close()
	// The JWKS is stored verbatim (compacted); allow room for the envelope.
	b, err := readBounded(fh, -1, limit+64<<10)
	if err != nil {
		return stateFile{}, err
	}
	var s stateFile
	if err := json.Unmarshal(b, &s); err != nil {
		return stateFile{}, fmt.Errorf("%w: state file: %w", ErrMalformed, err)
	}
	return s, nil
}

// writeState replaces the state file atomically: a private temporary file in
// the same directory, synced, then renamed over the old one.
func writeState(path string, s stateFile) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".jwks-state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
