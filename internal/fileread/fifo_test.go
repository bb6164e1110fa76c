//go:build unix

package fileread

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/fileread/fifotest"
)

func TestRegularRefusesPipesAndDevices(t *testing.T) {
	for name, path := range map[string]string{"fifo": fifotest.Make(t, "pipe"), "device": os.DevNull} {
		t.Run(name, func(t *testing.T) {
			fifotest.Within(t, "Regular", func() {
				if b, _, err := Regular(path, 64); !errors.Is(err, ErrNotRegular) || b != nil {
					t.Errorf("Regular(%s) = %q, %v; want ErrNotRegular", name, b, err)
				}
			})
		})
	}
}

func TestAnyReadsAPipe(t *testing.T) {
	t.Run("without-a-writer", func(t *testing.T) {
		p := fifotest.Make(t, "pipe")
		fifotest.Within(t, "Any", func() {
			if b, err := Any(p, 64); err != nil || len(b) != 0 {
				t.Errorf("Any(a pipe without a writer) = %q, %v; want empty", b, err)
			}
		})
	})
	t.Run("with-a-writer", func(t *testing.T) {
		p := fifotest.Make(t, "pipe")
		fifotest.Within(t, "Any", func() {
			r, err := Open(p) // held open, so that the writer's open does not wait
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			w, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				time.Sleep(50 * time.Millisecond) // Any waits for the data
				w.Write([]byte("issuers: []\n"))
				w.Close()
			}()
			if b, err := Any(p, 64); err != nil || string(b) != "issuers: []\n" {
				t.Errorf("Any(a pipe) = %q, %v", b, err)
			}
		})
	})
}
