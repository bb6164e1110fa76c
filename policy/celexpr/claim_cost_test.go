package celexpr

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestClaimReadCostIsBounded: an expression that reads an object claim
// inside a loop over a list claim must cost the same order of work as the
// full decoding it replaces (decode once). Both claims are the token
// holder's: a 16 KiB token carrying a list of 1000 items and an object
// of ~10 KiB makes the lazy map decode the object once per iteration
// (~14 MB of json.Unmarshal per request, within the CEL cost limit, since
// each read costs one unit).
func TestClaimReadCostIsBounded(t *testing.T) {
	var c Compiler
	e, err := c.Compile(`claims.groups.exists(g, g == claims.org.name)`, DefaultCostLimitForTest)
	if err != nil {
		t.Fatal(err)
	}
	p := e.(*program)
	var b strings.Builder
	b.WriteString(`{"groups":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"a"`)
	}
	b.WriteString(`],"org":{"name":"z"`)
	for i := 0; b.Len() < 16000; i++ {
		fmt.Fprintf(&b, `,"%x":0`, i)
	}
	b.WriteString(`}}`)
	res := newResult(b.String())
	t.Logf("claims: %d bytes", b.Len())

	alloc := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var want, got bool
	var refErr, err2 error
	ref := alloc(func() { want, refErr = referenceEval(p, res, lazyRequest) })
	lazy := alloc(func() { got, err2 = p.Eval(res, lazyRequest) })
	t.Logf("reference (decode once) %d bytes = %v, %v; lazy %d bytes = %v, %v", ref, want, refErr, lazy, got, err2)
	if refErr != nil {
		t.Fatalf("the reference evaluation: %v; the scenario must stay within the cost limit", refErr)
	}
	if got != want || (err2 == nil) != (refErr == nil) {
		t.Errorf("lazy = %v, %v; the reference = %v, %v", got, err2, want, refErr)
	}
	if lazy > 4*ref+1<<20 {
		t.Errorf("one evaluation allocated %d bytes, %d× the full decoding's %d: the cost limit does not bound the work a token can cause", lazy, lazy/max(ref, 1), ref)
	}
}

// DefaultCostLimitForTest is the cost limit of TestClaimReadCostIsBounded:
// the default of policy.Options.
const DefaultCostLimitForTest = 10000
