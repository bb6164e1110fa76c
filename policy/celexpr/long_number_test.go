package celexpr

import (
	"strings"
	"testing"
)

// TestLongNumberClaimNotMisread: a claim number longer than
// jsonscan.MaxFloatLiteral is an evaluation error (a deny), not the number
// strconv.ParseFloat makes of it: it counts at most 800 digits, so 1000
// spelled "1" + 2000 zeros + "e-1997" read as a number near 0 and
// claims.risk < 50 allowed it, where any other reader of the token (a
// JSON library reading it exactly, the application) sees 1000. Numbers of
// ordinary length read as before, in a list as in a scalar.
func TestLongNumberClaimNotMisread(t *testing.T) {
	long1000 := "1" + strings.Repeat("0", 2000) + "e-1997"
	long1 := "0." + strings.Repeat("0", 900) + "1e901" // 1, with 902 digits
	for _, tt := range []struct {
		name, expr, claims string
		allow, err         bool
	}{
		{"long-scalar", `claims.risk < 50.0`, `{"risk":` + long1000 + `}`, false, true},
		{"long-scalar-negated", `!(claims.risk >= 50.0)`, `{"risk":` + long1000 + `}`, false, true},
		{"long-in-list", `claims.risks.all(r, r < 50.0)`, `{"risks":[1,` + long1000 + `]}`, false, true},
		{"long-small-value", `claims.level == 1.0`, `{"level":` + long1 + `}`, false, true},
		{"short-scalar", `claims.risk < 50.0`, `{"risk":1e3}`, false, false},
		{"short-scalar-low", `claims.risk < 50.0`, `{"risk":10.000}`, true, false},
		{"short-in-list", `claims.risks.all(r, r < 50.0)`, `{"risks":[1,2.5e1]}`, true, false},
		{"exactly-800", `claims.level == 1.0`, `{"level":1.` + strings.Repeat("0", 798) + `}`, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Compiler
			e, err := c.Compile(tt.expr, DefaultCostLimitForTest)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.(*program).Eval(newResult(tt.claims), lazyRequest)
			if (err != nil) != tt.err || (err == nil && got != tt.allow) {
				t.Errorf("%s over %.40s… = %v, %v; want allow %v, error %v", tt.expr, tt.claims, got, err, tt.allow, tt.err)
			}
		})
	}
}
