package testlog_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/internal/testlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestBufferConcurrent writes from many goroutines while reading (run with
// -race) and checks that every line arrives whole.
func TestBufferConcurrent(t *testing.T) {
	var b testlog.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				fmt.Fprintf(&b, "writer %d line %d\n", i, j)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 400 {
		t.Fatalf("got %d lines, want 400", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "writer ") {
			t.Fatalf("torn line %q", l)
		}
	}
	if b.Len() != len(b.String()) {
		t.Errorf("Len() = %d, want %d", b.Len(), len(b.String()))
	}
	b.Reset()
	if b.Len() != 0 || b.String() != "" {
		t.Errorf("after Reset: Len() = %d, String() = %q, want empty", b.Len(), b.String())
	}
}
