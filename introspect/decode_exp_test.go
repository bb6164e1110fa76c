package introspect_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/introspect"
)

// TestDecodeExpReadExactly: an active answer's exp, which bounds how long
// the answer is kept, is read as the number it is however spelled
// (internal/numericdate). It went through a float64 (strconv.ParseFloat,
// at most 800 digits before the point): an hour ahead spelled with 2 000
// zeros and e-2000 read as 1970 (the answer never kept); now times 10^1210
// read as now, past the 10^15 refused; -1e-400 read as -0 and passed,
// although negative.
func TestDecodeExpReadExactly(t *testing.T) {
	zeros := strings.Repeat("0", 2000)
	exp := int64(1893553445)
	tests := []struct {
		name, exp string
		want      time.Time // zero: refused
	}{
		{"2000-zeros", fmt.Sprintf("%d%se-2000", exp, zeros), time.Unix(exp, 0)},
		{"fraction-2000-zeros", fmt.Sprintf("%d%s.5e-2000", exp, zeros), time.Unix(exp, 0)},
		{"point-far-left", fmt.Sprintf("0.%s%de2010", zeros, exp), time.Unix(exp, 0)},
		{"fraction-beyond-a-float64", fmt.Sprintf("%d.999999999999", exp), time.Unix(exp, 999999999)},
		{"negative-zero", "-0", time.Unix(0, 0)},
		{"1e15-exponent", "1e15", time.Unix(1e15, 0)},
		{"now-times-10^1210", fmt.Sprintf("%d%se-790", exp, zeros), time.Time{}},
		{"beyond-1e15-by-a-nanosecond", "1000000000000000.000000001", time.Time{}},
		{"negative-below-a-float64", "-1e-400", time.Time{}},
		{"negative-2000-zeros", fmt.Sprintf("-%d%se-2000", exp, zeros), time.Time{}},
		{"beyond-a-float64", "1e400", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := introspect.Decode([]byte(`{"active":true,"sub":"a","exp":` + tt.exp + `}`))
			if tt.want.IsZero() {
				if !errors.Is(err, introspect.ErrBadAnswer) {
					t.Fatalf("Decode() = %+v, %v; want ErrBadAnswer", a, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode() = %v", err)
			}
			if !a.ExpiresAt.Equal(tt.want) {
				t.Errorf("ExpiresAt = %s, want %s", a.ExpiresAt.Format(time.RFC3339Nano), tt.want.UTC().Format(time.RFC3339Nano))
			}
		})
	}
}
