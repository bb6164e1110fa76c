package extauthz

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/server"
)

// TestCheckCookieWorkBounded: a Check whose forwarded Cookie header fits
// the gRPC message bound (64 KiB) costs work in proportion to it, with a
// cookie token source. The quadratic scan of inValue made one such Check
// allocate about 2 GB and take seconds of CPU.
func TestCheckCookieWorkBounded(t *testing.T) {
	e := newEnv(t, envConfig{quiet: true, sources: []server.TokenSource{{Cookie: "access_token"}}})
	a := newAuthzGRPC(e.srv)
	cookie := "x=" + strings.Repeat("a ", 30<<10) + "="
	req := envoyRequest("GET", "/app", map[string]string{"cookie": cookie})
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if _, err := a.Check(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	if got, limit := m1.TotalAlloc-m0.TotalAlloc, uint64(256*len(cookie)); got > limit {
		t.Errorf("one Check with a %d-byte cookie header allocated %d MiB, more than %d MiB", len(cookie), got>>20, limit>>20)
	}
}
