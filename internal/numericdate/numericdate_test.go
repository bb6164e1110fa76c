package numericdate

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exact is the oracle: the literal read by math/big, its magnitude
// truncated to the nanosecond and saturated at Max. ok is false when
// math/big cannot read it, or when its exponent is beyond ±5000 (math/big
// would compute 10^exponent).
func exact(lit string) (v Value, ok bool) {
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		if e, err := strconv.Atoi(lit[i+1:]); err != nil || e > 5000 || e < -5000 {
			return Value{}, false
		}
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return Value{}, false
	}
	v.Neg = r.Sign() < 0
	r.Abs(r)
	ns := new(big.Int).Quo(new(big.Int).Mul(r.Num(), big.NewInt(1e9)), r.Denom())
	sec, nsec := new(big.Int).QuoRem(ns, big.NewInt(1e9), new(big.Int))
	if sec.Cmp(big.NewInt(Max)) >= 0 {
		v.Sec = Max
		return v, true
	}
	v.Sec, v.Nsec = sec.Int64(), nsec.Int64()
	return v, true
}

// TestRead: every spelling of a JSON number is read exactly, however long
// and whatever its exponent; anything that is not exactly a JSON number is
// refused. It moved here from verify (TestNumericDateLongSpellingsReadExactly
// there reads through the verifier).
func TestRead(t *testing.T) {
	zeros := strings.Repeat("0", 2000)
	tests := []struct {
		in   string
		want Value
		ok   bool
	}{
		{"0", Value{}, true},
		{"-0", Value{}, true},
		{"-0.0e5", Value{}, true},
		{"1764590400", Value{Sec: 1764590400}, true},
		{"-1764590400", Value{Neg: true, Sec: 1764590400}, true},
		{"999999999999999999", Value{Sec: 999999999999999999}, true},
		{"1000000000000000000", Value{Sec: Max}, true},
		{"1000000000000000001", Value{Sec: Max}, true},                                  // 19 digits: saturated, not summed
		{"9999999999999999999", Value{Sec: Max}, true},                                  // 19 digits past int64: no wrap to below 0
		{"9999999999999999999.5", Value{Sec: Max}, true},                                // the same with a fraction
		{"999999999999999999.5", Value{Sec: 999999999999999999, Nsec: 500000000}, true}, // 18 digits: exact
		{"123456789012345678901234567890", Value{Sec: Max}, true},
		{"1893553444.9999999999", Value{Sec: 1893553444, Nsec: 999999999}, true},
		{"1.8935534449999999999e9", Value{Sec: 1893553444, Nsec: 999999999}, true},
		{"18935534449999999999E-10", Value{Sec: 1893553444, Nsec: 999999999}, true},
		{"0.18935534449999999999e+10", Value{Sec: 1893553444, Nsec: 999999999}, true},
		{"-1.5", Value{Neg: true, Sec: 1, Nsec: 500000000}, true},
		{"0.0000000009", Value{}, true},
		{"-1e-400", Value{Neg: true}, true},
		{"1e401", Value{Sec: Max}, true},
		{"1e99999999999999999999999", Value{Sec: Max}, true},
		{"1e-99999999999999999999999", Value{}, true},
		{"1" + zeros[:800] + "e-790", Value{Sec: 1e10}, true},
		{"1" + zeros + "e-1990", Value{Sec: 1e10}, true},
		{"-1" + zeros + "e-1990", Value{Neg: true, Sec: 1e10}, true},
		{"1764590400" + zeros + "e-2000", Value{Sec: 1764590400}, true},
		{"1764590400" + zeros + "e-800", Value{Sec: Max}, true},
		{"0." + zeros + "1764590400e2010", Value{Sec: 1764590400}, true},
		{"17645904000e-0000000001", Value{Sec: 1764590400}, true},
		{"", Value{}, false},
		{"-", Value{}, false},
		{"+1", Value{}, false},
		{"01", Value{}, false},
		{"-01", Value{}, false},
		{"1.", Value{}, false},
		{".5", Value{}, false},
		{"1e", Value{}, false},
		{"1e+", Value{}, false},
		{"1 ", Value{}, false},
		{" 1", Value{}, false},
		{"0x10", Value{}, false},
		{"1_000", Value{}, false},
		{"Infinity", Value{}, false},
		{"NaN", Value{}, false},
		{"null", Value{}, false},
		{`"1"`, Value{}, false},
		{"1.5.5", Value{}, false},
		{"1e5e5", Value{}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.40s", tt.in), func(t *testing.T) {
			got, ok := Read(tt.in)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("Read(%.60q) = %+v, %t, want %+v, %t", tt.in, got, ok, tt.want, tt.ok)
			}
			if !ok {
				return
			}
			if o, ok := exact(tt.in); ok && o != got {
				t.Fatalf("math/big reads %+v", o)
			}
		})
	}
}

// TestTime: a Value is the instant of its sign and magnitude.
func TestTime(t *testing.T) {
	for _, tt := range []struct {
		v    Value
		want time.Time
	}{
		{Value{}, time.Unix(0, 0)},
		{Value{Sec: 1893553444, Nsec: 999999999}, time.Date(2030, 1, 2, 3, 4, 4, 999999999, time.UTC)},
		{Value{Neg: true, Sec: 1, Nsec: 500000000}, time.Unix(-2, 500000000)},
		{Value{Neg: true}, time.Unix(0, 0)},
	} {
		t.Run(fmt.Sprint(tt.v), func(t *testing.T) {
			if got := tt.v.Time(); !got.Equal(tt.want) || got.Location() != time.UTC {
				t.Errorf("Time() = %s, want %s UTC", got, tt.want)
			}
		})
	}
}

// TestBeyond: the bound a caller refuses beyond, to the nanosecond, of
// either sign.
func TestBeyond(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"1e11", false},
		{"100000000000.000000001", true},
		{"100000000000.0000000009", false}, // below a nanosecond: read as 1e11
		{"1e12", true},
		{"-1e12", true},
		{"-1e11", false},
		{"-100000000000.000000001", true},
		{"1e999", true},
	} {
		t.Run(tt.in, func(t *testing.T) {
			v, _ := Read(tt.in)
			if got := v.Beyond(1e11); got != tt.want {
				t.Errorf("Read(%s).Beyond(1e11) = %t, want %t", tt.in, got, tt.want)
			}
		})
	}
}

// TestReadDoesNotAllocate: the verifier's hot path reads every exp, nbf
// and iat with it.
func TestReadDoesNotAllocate(t *testing.T) {
	for _, in := range []string{"1764590400", "1764590400.123456789", "1.7645904e9", "-1.5e3"} {
		if n := testing.AllocsPerRun(100, func() { Read(in) }); n != 0 {
			t.Errorf("Read(%s): %v allocations", in, n)
		}
	}
}

// FuzzRead holds Read to math/big on random spellings: whatever the
// strict grammar accepts is read as math/big reads it (to the nanosecond,
// saturated at Max), and what math/big reads that Read refuses is no JSON
// number.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"0", "-0", "1764590400", "1764590400.5", "1.7645904e9", "-1.5e-3", "1e401",
		"1" + strings.Repeat("0", 900) + "e-890", "0." + strings.Repeat("0", 900) + "17e910",
		"01", "+1", "1.", ".5", "1e", "0x10", "1_0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := Read(s)
		if !ok {
			if isJSONNumber(s) {
				t.Fatalf("Read(%q) refused a JSON number", s)
			}
			return
		}
		if !isJSONNumber(s) {
			t.Fatalf("Read(%q) = %+v, not a JSON number", s, got)
		}
		if got.Sec < 0 || got.Sec > Max || got.Nsec < 0 || got.Nsec >= 1e9 || got.Sec == Max && got.Nsec != 0 {
			t.Fatalf("Read(%q) = %+v, out of its ranges", s, got)
		}
		if want, ok := exact(s); ok && want != got {
			t.Fatalf("Read(%q) = %+v, math/big reads %+v", s, got, want)
		}
	})
}

// isJSONNumber is RFC 8259's number grammar, written apart from Read.
func isJSONNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	intPart := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if intPart < 0 {
		intPart = len(s)
	}
	if intPart == 0 || intPart > 1 && s[0] == '0' {
		return false
	}
	s = s[intPart:]
	if frac, ok := strings.CutPrefix(s, "."); ok {
		n := len(frac) - len(strings.TrimLeft(frac, "0123456789"))
		if n == 0 {
			return false
		}
		s = frac[n:]
	}
	if s == "" {
		return true
	}
	if s[0] != 'e' && s[0] != 'E' {
		return false
	}
	s = s[1:]
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}
