package server

import (
	"runtime"
	"strings"
	"testing"
)

// TestCookieValueWorkLinear: reading a cookie source from a Cookie header
// costs work in proportion to the header. A value of many spaces (or ',')
// and one '=' at its end made inValue scan from every separator to that
// '=' and phpSame copy what lay between: doubling the header quadrupled the
// work (2 GB allocated, 2 s of CPU, for one 64 KiB header).
func TestCookieValueWorkLinear(t *testing.T) {
	alloc := func(n int) uint64 {
		line := "x=" + strings.Repeat("a ", n/2) + "="
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, st := cookieValue([]string{line}, "access_token"); st != tokenMissing {
			t.Fatalf("cookieValue(%d bytes) = %v, want missing", n, st)
		}
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	const n = 64 << 10 // the listener's header bound
	if got, limit := alloc(n), uint64(64*n); got > limit {
		t.Errorf("cookieValue of a %d-byte Cookie header allocated %d bytes, more than %d: the work grows with the square of the header", n, got, limit)
	}
}
