package celexpr

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
)

// TestClaimRegexCompileIsBounded: a regular expression that comes from a
// claim is compiled at every evaluation, and cel-go charges matches by the
// pattern's length, not by the program it compiles to: ".{1000}" is 7
// characters and 1000 instructions. A 14 KB claim (within the default
// 16 KiB token) made one evaluation allocate over 400 MB within the cost
// limit. A pattern computed at run time now costs one unit per
// instruction, counted before it is compiled, so the cost limit bounds
// the work; literal patterns (compiled at load) and small patterns from
// claims are unchanged.
func TestClaimRegexCompileIsBounded(t *testing.T) {
	huge := strings.Repeat(`.{1000}`, 2000) // 14 000 bytes, 2 000 000 instructions
	var many []string                       // 500 patterns of 2 000 instructions each
	for range 500 {
		many = append(many, strconv.Quote(`.{1000}.{1000}`))
	}
	tests := []struct {
		name, expr, claims string
		want               bool // the answer of a bounded evaluation; false with an error when over
		bounded            bool // the evaluation must stop at the limit (an error)
	}{
		{"one-huge-pattern", `claims.email.matches(claims.allowed)`, `{"email":"a@example.com","allowed":"` + huge + `"}`, false, true},
		{"one-huge-pattern-global", `matches(request.path, claims.allowed)`, `{"allowed":"` + huge + `"}`, false, true},
		{"many-patterns-in-a-loop", `claims.allowed.exists(p, claims.email.matches(p))`, `{"email":"a@example.com","allowed":[` + strings.Join(many, ",") + `]}`, false, true},
		{"small-pattern-matches", `claims.email.matches(claims.allowed)`, `{"email":"a@example.com","allowed":"^[a-z]+@example\\.com$"}`, true, false},
		{"small-pattern-does-not-match", `claims.email.matches(claims.allowed)`, `{"email":"a@example.org","allowed":"^[a-z]+@example\\.com$"}`, false, false},
		{"literal-pattern", `claims.email.matches("^[a-z]{1,64}@example\\.com$")`, `{"email":"a@example.com"}`, true, false},
	}
	var c Compiler
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := c.Compile(tt.expr, DefaultCostLimitForTest)
			if err != nil {
				t.Fatal(err)
			}
			checkBoundedEval(t, e, tt.claims, tt.want, tt.bounded, 32<<20)
		})
	}
}

// checkBoundedEval evaluates e over claims once: a bounded evaluation must
// fail (the cost limit stops it), another must give want; either must
// allocate at most maxAlloc bytes.
func checkBoundedEval(t *testing.T, e policy.Expression, claims string, want, bounded bool, maxAlloc uint64) {
	t.Helper()
	res := newResult(claims)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := e.Eval(res, lazyRequest)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("= %v, %v; %d KB allocated", got, err, alloc>>10)
	if bounded && err == nil {
		t.Errorf("= %v without an error: the cost limit did not stop it", got)
	}
	if !bounded && (err != nil || got != want) {
		t.Errorf("= %v, %v; want %v", got, err, want)
	}
	if alloc > maxAlloc {
		t.Errorf("one evaluation allocated %d MB (at most %d): a claim's regular expression is not bounded by the cost limit", alloc>>20, maxAlloc>>20)
	}
}
