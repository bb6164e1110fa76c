package celexpr

import (
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
)

// TestLongNumberClaimNotMisread: a claim number longer than
// jsonscan.MaxFloatLiteral is an evaluation error (a deny), not the number
// strconv.ParseFloat makes of it: it counts at most 800 digits, so 1000
// spelled "1" + 2000 zeros + "e-1997" read as a number near 0 and
// claims.risk < 50 allowed it, where any other reader of the token (a
// JSON library reading it exactly, the application) sees 1000. The same
// for a string claim converted with double(), which cel-go reads with
// strconv.ParseFloat too. Numbers of ordinary length read as before, in a
// list as in a scalar, and double() converts as cel-go's own overloads do.
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
		{"long-string-to-double", `double(claims.risk) < 50.0`, `{"risk":"` + long1000 + `"}`, false, true},
		{"long-string-to-double-negated", `!(double(claims.risk) >= 50.0)`, `{"risk":"` + long1000 + `"}`, false, true},
		{"long-strings-to-double", `claims.risks.all(r, double(r) < 50.0)`, `{"risks":["1","` + long1000 + `"]}`, false, true},
		{"string-exactly-800-to-double", `double(claims.level) == 1.0`, `{"level":"1.` + strings.Repeat("0", 798) + `"}`, true, false},
		{"string-801-to-double", `double(claims.level) == 1.0`, `{"level":"1.` + strings.Repeat("0", 799) + `"}`, false, true},
		{"string-to-double", `double(claims.risk) < 50.0`, `{"risk":"1e1"}`, true, false},
		{"string-to-double-high", `double(claims.risk) < 50.0`, `{"risk":"1e3"}`, false, false},
		{"int-to-double", `double(claims.n) == 3.0`, `{"n":3}`, true, false},
		{"double-to-double", `double(claims.n) == 2.5`, `{"n":2.5}`, true, false},
		{"list-to-double", `double(claims.n) == 1.0`, `{"n":[1]}`, false, true},
		{"bad-string-to-double", `double(claims.risk) < 50.0`, `{"risk":"ten"}`, false, true},
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

// TestDoubleChargedAsCelGo: a double() call bounded by boundDouble costs
// what cel-go's own call costs, in a loop as alone, on a string, an int
// and a double: the decorator changes what a long string reads as, not
// the cost limit's arithmetic.
func TestDoubleChargedAsCelGo(t *testing.T) {
	env, err := newEnv()
	if err != nil {
		t.Fatal(err)
	}
	act := map[string]any{"claims": map[string]any{"l": []any{"1", "2", 3.0, "4"}, "s": "12", "n": 3.0, "i": int64(3)}}
	for _, src := range []string{`claims.l.all(x, double(x) > 0.0)`, `double(claims.s) > 1.0`, `double(claims.n) > 1.0`, `double(claims.i) > 1.0`} {
		t.Run(src, func(t *testing.T) {
			ast, iss := env.Compile(src)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			var costs []uint64
			for _, dec := range [][]cel.ProgramOption{nil, {cel.CustomDecoratorV2(boundDouble())}} {
				p, err := env.Program(ast, append([]cel.ProgramOption{cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost)}, dec...)...)
				if err != nil {
					t.Fatal(err)
				}
				out, det, err := p.Eval(act)
				if err != nil || out != types.True {
					t.Fatalf("= %v, %v; want true", out, err)
				}
				costs = append(costs, *det.ActualCost())
			}
			if costs[0] != costs[1] {
				t.Errorf("cost %d with cel-go's double, %d bounded", costs[0], costs[1])
			}
		})
	}
}
