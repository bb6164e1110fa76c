//go:build unix

package config

import (
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/internal/fileread"
	"github.com/jwksverify/jwksverify/internal/fileread/fifotest"
)

// A secret_file (or a bearer token file) that is a named pipe blocked the
// load in open(2) until a writer came: starting, `jwksverify check` and a
// reload hung instead of failing. A secret is refused as not a regular
// file; the configuration itself may be a pipe (--config <(…)), and one
// without a writer, as at a reload, reads as empty.
func TestReadFileFIFONeverBlocks(t *testing.T) {
	fifo := fifotest.Make(t, "secret")
	tests := []struct {
		name  string
		read  func() error
		check func(error) bool
	}{
		{"SecretKey", func() error { _, _, err := SecretKey(fifo, ""); return err },
			func(err error) bool { return errors.Is(err, fileread.ErrNotRegular) }},
		{"bearerToken", func() error { _, err := bearerToken(new(Plan), "ssf.push.bearer_token_file", fifo, true); return err },
			func(err error) bool { return errors.Is(err, fileread.ErrNotRegular) }},
		{"ReadFile", func() error {
			b, err := ReadFile(fifo, maxConfigBytes)
			if err == nil && len(b) != 0 {
				return errors.New("read something from a pipe without a writer")
			}
			return err
		}, func(err error) bool { return err == nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fifotest.Within(t, tt.name, func() {
				if err := tt.read(); !tt.check(err) {
					t.Errorf("%s(a named pipe) = %v", tt.name, err)
				}
			})
		})
	}
}
