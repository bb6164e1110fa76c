//go:build unix

package jwks

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/fileread/fifotest"
)

// A jwks_file (or a fetch_bearer_token_file) that is a named pipe is not a
// regular file: it is refused as a directory is (ErrMalformed), where it
// blocked in open(2) until some writer came. Blocked there, Fetch ignored
// its context, a Fetcher's flight never ended, and Close (and Retire,
// which a reload calls under its lock) never returned.
func TestFileFIFONeverBlocks(t *testing.T) {
	fifo := fifotest.Make(t, "keys.json")
	t.Run("Fetch", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		fifotest.Within(t, "Fetch", func() {
			if _, err := Fetch(ctx, Options{File: fifo}); !errors.Is(err, ErrMalformed) {
				t.Errorf("Fetch(FIFO) = %v, want ErrMalformed (not a regular file)", err)
			}
		})
	})
	t.Run("Fetcher.Close", func(t *testing.T) {
		f, err := New(Options{File: fifo, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		// The first read fails (a read blocked in open(2) never would).
		for deadline := time.Now().Add(10 * time.Second); f.Keys().Status().ConsecutiveFailures == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("Status() = %+v after 10s, want the FIFO refused as a failed read", f.Keys().Status())
				break
			}
		}
		fifotest.Within(t, "Fetcher.Close", func() { f.Close() })
	})
	t.Run("BearerTokenFile", func(t *testing.T) {
		fifotest.Within(t, "ReadBearerToken", func() {
			if _, err := ReadBearerToken(fifo); err == nil {
				t.Errorf("ReadBearerToken(FIFO) = nil error, want a refusal: every fetch of the issuer would hang, outside FetchTimeout")
			}
		})
	})
}
