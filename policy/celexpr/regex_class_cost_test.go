package celexpr

import (
	"strings"
	"testing"
)

// TestClaimRegexUnicodeClassesAreBounded: a Unicode class escape (\pL,
// \PN, \p{Greek}) is 3 to 9 bytes of a pattern and one instruction of its
// program, but the parser expands it to its table's ranges (\pL: 659,
// about 13 KB allocated each time). A pattern read from a claim was
// measured by instructions after it was parsed: a claim of 2 800 \pL
// (11 KB of JSON, within the default 16 KiB token) cost 2 800 units and
// allocated about 70 MB per evaluation, half of it in the measuring parse
// itself. Each class escape is now charged its largest table's size
// before the pattern is parsed, and a class its ranges after.
func TestClaimRegexUnicodeClassesAreBounded(t *testing.T) {
	tests := []struct {
		name, allowed string
		want          bool
		bounded       bool // the evaluation must stop at the limit (an error)
	}{
		{"many-letter-classes", strings.Repeat(`\pL`, 2800), false, true},
		{"many-negated-classes-in-a-class", strings.Repeat(`[\PL\PN]`, 1100), false, true},
		{"many-folded-classes", strings.Repeat(`(?i)\pL`, 1400), false, true},
		{"one-class", `^\pL+@example\.com$`, true, false},
		{"escaped-backslash-is-no-class", strings.Repeat(`\\pL`, 3) + `|^a@`, true, false},
	}
	var c Compiler
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := c.Compile(`claims.email.matches(claims.allowed)`, DefaultCostLimitForTest)
			if err != nil {
				t.Fatal(err)
			}
			checkBoundedEval(t, e, `{"email":"a@example.com","allowed":"`+strings.ReplaceAll(tt.allowed, `\`, `\\`)+`"}`, tt.want, tt.bounded, 4<<20)
		})
	}
}
