package celexpr

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestClaimScalarReadCostIsBounded: a string or number claim read inside a
// loop over a list claim must cost the same order of work as the full
// decoding it replaces (decode once), as a list or object claim already
// did (TestClaimReadCostIsBounded). Each read costs one unit of CEL cost,
// and the lazy claims map converted a string or number claim at every
// read: a string of escapes was unescaped, and a number of a thousand
// digits from 2^53 on read exactly with math/big, once per iteration of a
// loop over a list of thousands of zeros in the same 16 KiB token (18 MB
// and 58 ms, 15 MB and 76 ms, per evaluation, within the cost limit).
func TestClaimScalarReadCostIsBounded(t *testing.T) {
	list := "[" + strings.Repeat("0,", 3499) + "0]"
	tests := []struct {
		name, expr, big string
	}{
		{"escaped-string", `claims.groups.all(g, claims.big != null)`, `"` + strings.Repeat(`\u00e9`, 1200) + `"`},
		{"escaped-string-computed-key", `claims.groups.all(g, claims["b" + "ig"] != null)`, `"` + strings.Repeat(`\u00e9`, 1200) + `"`},
		{"escaped-string-size", `claims.groups.all(g, size(claims.big) > 0)`, `"` + strings.Repeat(`\u00e9`, 1200) + `"`},
		{"long-number", `claims.groups.all(g, claims.big != null)`, "9" + strings.Repeat("0", 1000) + "e-700"},
	}
	alloc := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var c Compiler
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := c.Compile(tt.expr, DefaultCostLimitForTest)
			if err != nil {
				t.Fatal(err)
			}
			p := e.(*program)
			res := newResult(`{"groups":` + list + `,"big":` + tt.big + `}`)
			var want, got bool
			var refErr, lazyErr error
			ref := alloc(func() { want, refErr = referenceEval(p, res, lazyRequest) })
			start := time.Now()
			lazy := alloc(func() { got, lazyErr = p.Eval(res, lazyRequest) })
			t.Logf("reference (decode once) %d bytes = %v, %v; lazy %d bytes in %v = %v, %v", ref, want, refErr, lazy, time.Since(start), got, lazyErr)
			if got != want || (lazyErr == nil) != (refErr == nil) {
				t.Errorf("lazy = %v, %v; the reference = %v, %v", got, lazyErr, want, refErr)
			}
			if lazy > 4*ref+1<<20 {
				t.Errorf("one evaluation allocated %d bytes, %d× the full decoding's %d: a scalar claim is converted at every read", lazy, lazy/max(ref, 1), ref)
			}
		})
	}
}
