package celexpr

import "testing"

// TestDoubleLiteralBeyond2To53: a double literal from 2^53 on is refused at
// load when it is not exactly the number written (9007199254740993.0 is
// the double 9007199254740992, another id), as an int literal is; one that
// is exact, or below 2^53, loads.
func TestDoubleLiteralBeyond2To53(t *testing.T) {
	for _, tt := range []struct {
		expr    string
		refused bool
	}{
		{`claims.uid == 9007199254740992.0`, false},
		{`claims.uid == 123456789012345680.0`, false},
		{`claims.n < 1e300 && claims.n > -1e20 && claims.n != 0.1`, false},
		{`claims.n < 18446744073709551616.5`, false},
		{`"é€" != "" && claims.uid == 9007199254740992.0`, false},
		{`claims.uid == 9007199254740993.0`, true},
		{`claims.uid == 9.007199254740993e15`, true},
		{`claims.uid == -   123456789012345677.0`, true},
		{`"é€" != "" && claims.uid == 9007199254740993.0`, true},
		{`claims.uids.exists(u, u == 1.23456789012345677e17)`, true},
	} {
		var c Compiler
		_, err := c.Compile(tt.expr, DefaultCostLimitForTest)
		if (err != nil) != tt.refused {
			t.Errorf("%s: %v, want refused %v", tt.expr, err, tt.refused)
		}
	}
}
