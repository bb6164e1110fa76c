package celexpr

import (
	"strings"
	"testing"
)

// TestClaimRegexMatchIsBounded: matching costs what the pattern's program
// is, at every position of the string, and cel-go charges it by the
// pattern's length, after the match. A pattern read from a claim within
// the instruction bound, against a long claim, took a second of CPU in one
// evaluation: "[a-z]{1000}x" (12 bytes, 2001 instructions) against 14 000
// a's answered false without an error after 0.3 s, and nine "a{1000}"
// against 11 000 a's ran 1.3 s before the limit stopped it. The match is
// now charged (with the instruction count for the pattern's length) before
// it runs, and one beyond the limit is an error without a match.
func TestClaimRegexMatchIsBounded(t *testing.T) {
	tests := []struct {
		name, expr, email, allowed string
		want                       bool
		refused                    bool // refused before the match: the error names the bound
	}{
		{"long-string-class-repeat", `claims.email.matches(claims.allowed)`, strings.Repeat("a", 14000), `[a-z]{1000}x`, false, true},
		{"long-string-nine-repeats", `claims.email.matches(claims.allowed)`, strings.Repeat("a", 11000), strings.Repeat(`a{1000}`, 9) + `x`, false, true},
		{"global-form", `matches(claims.email, claims.allowed)`, strings.Repeat("a", 14000), `[a-z]{1000}x`, false, true},
		{"negated", `!claims.email.matches(claims.allowed)`, strings.Repeat("a", 14000), `[a-z]{1000}x`, false, true},
		{"small-pattern-long-string", `claims.email.matches(claims.allowed)`, strings.Repeat("a", 1000), `^a+$`, true, false},
		{"small-pattern-short-string", `claims.email.matches(claims.allowed)`, "a@example.com", `^[a-z]+@example\\.com$`, true, false},
		// The match is charged once: the bound's charge, with cel-go's own
		// charge of the call (by the pattern's length) counted in it. Both
		// (5 227 and 5 201 units) denied this 8 000-byte scope.
		{"built-pattern-long-string-charged-once", `claims.email.matches('(^| )' + claims.allowed + ':orders:read( |$)')`, strings.Repeat("x", 7983) + " acme:orders:read", "acme", true, false},
	}
	var c Compiler
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := c.Compile(tt.expr, DefaultCostLimitForTest)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Eval(newResult(`{"email":"`+tt.email+`","allowed":"`+tt.allowed+`"}`), lazyRequest)
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "is beyond the cost limit") {
					t.Errorf("Eval() = %v, %v; want the bound's error, raised before the match", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Eval() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
