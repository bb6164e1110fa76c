package celexpr

import (
	"strings"
	"testing"
	"time"
)

// TestExactNumberCostIsLinear: a claim number is now read exactly from
// 2^53 on (exactDouble: math/big at 2048 bits), and math/big's decimal
// scan is quadratic in the literal's digits. A token holder's number of
// the token's size (max_token_bytes up to 1 MiB), say
// 123456789012345678901.000…0, is a double exactly, so every evaluation
// of an expression reading it paid seconds of CPU, where
// strconv.ParseFloat (the reading before) takes milliseconds.
func TestExactNumberCostIsLinear(t *testing.T) {
	var c Compiler
	e, err := c.Compile(`claims.n == 1.0`, DefaultCostLimitForTest)
	if err != nil {
		t.Fatal(err)
	}
	p := e.(*program)
	lit := "123456789012345678901." + strings.Repeat("0", 700_000)
	res := newResult(`{"n":` + lit + `}`)
	start := time.Now()
	got, err := p.Eval(res, lazyRequest)
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("one evaluation over a %d-byte number took %v (= %v, %v): quadratic in the token's size", len(lit), d, got, err)
	}
}
