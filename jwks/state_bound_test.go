package jwks

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestStateFileWithinItsBound: a set the fetcher took within max_jwks_bytes
// comes back at a restart whatever its characters. json.Marshal wrote "<",
// ">" and "&" in six bytes each, so a set near the bound and full of them
// made a state file the restart refused as oversized: it started without
// keys during the outage the file exists for.
func TestStateFileWithinItsBound(t *testing.T) {
	const limit = 64 << 10
	set := testkeys.JWKS(keyA, keyB)
	for _, fill := range []string{"a", "&", "<>", "\u2028"} {
		t.Run(fill, func(t *testing.T) {
			// The set padded to about 90% of the bound with a member the
			// parser ignores.
			pad := strings.Repeat(fill, (limit*9/10-len(set))/len(fill))
			body := append([]byte(`{"x":"`+pad+`",`), bytes.TrimPrefix(set, []byte("{"))...)
			dir := t.TempDir()
			ks := newKeyServer(t, body)
			o := Options{URL: ks.URL(), Issuer: "https://idp.example/", StateDir: dir, StaleFor: time.Hour, MaxBytes: limit}
			synctest.Test(t, func(t *testing.T) {
				f, _ := startFetcher(t, newBubbleClock(), o)
				if n := f.Keys().Load().Len(); n != 2 {
					t.Fatalf("setup: %d keys fetched, want 2", n)
				}
				f.Close()
			})
			ks.set(func(ks *keyServer) { ks.status = http.StatusServiceUnavailable })
			synctest.Test(t, func(t *testing.T) {
				clk := newBubbleClock()
				clk.Advance(10 * time.Minute)
				f, err := New(testOptions(clk, o))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if n := f.Keys().Load().Len(); n != 2 {
					size := "none"
					if fi, err := os.Stat(statePath(dir, o.Issuer, "")); err == nil {
						size = fmt.Sprint(fi.Size(), " bytes")
					}
					t.Errorf("restart during an outage: %d keys from the state file (%s for a %d-byte set), want 2", n, size, len(body))
				}
			})
		})
	}
}

// TestStateTooLargeNotWritten: a state a restart could not read back (here
// a set past the bound; from a fetch, discovered URLs or validators as long
// as their documents) is not written, and the older file is removed rather
// than left to bring back, at a restart, keys the provider has withdrawn
// since.
func TestStateTooLargeNotWritten(t *testing.T) {
	const limit = MinMaxBytes
	path := filepath.Join(t.TempDir(), "state.json")
	small := stateFile{Issuer: "https://idp.example/", FetchedAt: t0, JWKS: testkeys.JWKS(keyA)}
	if err := writeState(path, small, limit); err != nil {
		t.Fatalf("small state: %v", err)
	}
	if _, err := readState(path, limit); err != nil {
		t.Fatalf("small state read back: %v", err)
	}
	large := small
	large.JWKSURI = "https://idp.example/" + strings.Repeat("k", 70<<10)
	if err := writeState(path, large, limit); !errors.Is(err, errStateTooLarge) {
		t.Errorf("writeState(larger than readState reads) = %v, want errStateTooLarge", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the older state file: %v, want it removed", err)
	}
}
