package celexpr

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestDynamicClaimKeyCostIsBounded: reading claims by a key computed at run
// time (claims[k] inside claims.exists(k, ...), the only way CEL reads a
// map's values in a loop over it; "x" in claims for each x of a list claim)
// must cost the same order of work as the full decoding it replaces. Each
// such read costs one unit of CEL cost, and the lazy claims map answered it
// with a scan of the whole claims set: a 16 KiB token with a thousand
// members made one evaluation scan it a thousand times (20-750 ms of CPU
// per request, within the cost limit, against about 1 ms for decoding it
// once). The allocations of the scans' unescaped member names are the
// deterministic witness of that work.
func TestDynamicClaimKeyCostIsBounded(t *testing.T) {
	// A list claim of 1000 items drives the reads; member names with an
	// escape (as an IdP's JSON encoder may write a non-ASCII name) are
	// unescaped, and allocated, at every scan.
	var b strings.Builder
	b.WriteString(`{"groups":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%c"`, 'a'+i%26)
	}
	b.WriteString(`]`)
	for i := 0; b.Len() < 16000; i++ {
		fmt.Fprintf(&b, `,"\u0072%096x":true`, i)
	}
	b.WriteString(`}`)
	res := newResult(b.String())

	alloc := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var c Compiler
	for _, src := range []string{
		`claims.groups.exists(g, g in claims)`,
		`claims.groups.exists(g, g in claims && claims[g] == "admin")`,
		`claims.groups.all(g, !(g in claims) || claims[g] != "blocked")`,
	} {
		t.Run(src, func(t *testing.T) {
			e, err := c.Compile(src, DefaultCostLimitForTest)
			if err != nil {
				t.Fatal(err)
			}
			p := e.(*program)
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
				t.Errorf("one evaluation allocated %d bytes, %d× the full decoding's %d: a read by a computed key scans the whole claims set", lazy, lazy/max(ref, 1), ref)
			}
		})
	}
}
