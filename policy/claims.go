package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/jwksverify/jwksverify/verify"
)

// claimMatcher is a compiled [Claim].
type claimMatcher struct {
	claim string
	slot  int // index of the claim in Policy.names
	want  []scalar
}

// scalar is a configured JSON scalar to compare claim values with.
type scalar struct {
	kind byte   // 's' string, 'n' number, 'b' bool
	str  string // the string; for a number its literal; for a bool "true"/"false"
	num  number // for a number
}

func compileClaim(c Claim) (claimMatcher, error) {
	if c.Claim == "" {
		return claimMatcher{}, fmt.Errorf(".claim: empty")
	}
	m := claimMatcher{claim: c.Claim}
	switch {
	case c.AnyOf != nil && c.Equals != nil:
		return m, fmt.Errorf(": give any_of or equals, not both")
	case c.Equals != nil:
		v, err := toScalar(c.Equals)
		if err != nil {
			return m, fmt.Errorf(".equals: %w", err)
		}
		m.want = []scalar{v}
	case len(c.AnyOf) > 0:
		for i, a := range c.AnyOf {
			v, err := toScalar(a)
			if err != nil {
				return m, fmt.Errorf(".any_of[%d]: %w", i, err)
			}
			m.want = append(m.want, v)
		}
	default:
		return m, fmt.Errorf(": one of any_of (a non-empty list) or equals is required")
	}
	return m, nil
}

// toScalar converts a configured value (from YAML or JSON) to a scalar.
func toScalar(v any) (scalar, error) {
	switch x := v.(type) {
	case string:
		return scalar{kind: 's', str: x}, nil
	case bool:
		return scalar{kind: 'b', str: strconv.FormatBool(x)}, nil
	case json.Number:
		return numberScalar(string(x))
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return numberScalar(strconv.FormatInt(rv.Int(), 10))
	case rv.CanUint():
		return numberScalar(strconv.FormatUint(rv.Uint(), 10))
	case rv.CanFloat():
		f := rv.Float()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return scalar{}, fmt.Errorf("%v is not a JSON number", f)
		}
		return numberScalar(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return scalar{}, fmt.Errorf("want a string, number or boolean, got %T", v)
}

func numberScalar(lit string) (scalar, error) {
	// strconv's 'g' form ("1e+21") is a JSON number too.
	n, ok := parseNumber(lit)
	if !ok {
		return scalar{}, fmt.Errorf("%q is not a JSON number", lit)
	}
	return scalar{kind: 'n', str: lit, num: n}, nil
}

// holds reports whether the token's claim, whose JSON text is v ("" when
// absent), or one element of an array claim, equals one of the wanted
// values.
func (m *claimMatcher) holds(v string) bool {
	if v == "" {
		return false
	}
	if len(v) > 0 && v[0] == '[' {
		for el := range verify.JSONElements(v) {
			if m.equalsOne(el) {
				return true
			}
		}
		return false
	}
	return m.equalsOne(v)
}

// equalsOne reports whether the JSON value v equals one wanted value.
func (m *claimMatcher) equalsOne(v string) bool {
	if v == "" {
		return false
	}
	switch c := v[0]; {
	case c == '"':
		s, ok := verify.JSONString(v)
		if !ok {
			return false
		}
		for i := range m.want {
			if m.want[i].kind == 's' && m.want[i].str == s {
				return true
			}
		}
	case c == 't' || c == 'f':
		for i := range m.want {
			if m.want[i].kind == 'b' && m.want[i].str == v {
				return true
			}
		}
	case c == '-' || ('0' <= c && c <= '9'):
		n, ok := parseNumber(v)
		if !ok {
			return false
		}
		for i := range m.want {
			if m.want[i].kind == 'n' && m.want[i].num.equal(n) {
				return true
			}
		}
	}
	return false
}

// number is a JSON number as an exact decimal: sign, significant digits
// (no leading or trailing zeros; the digits of int and frac, in that
// order) and a power of ten. Zero has no digits. Comparing two needs no
// allocation and loses no precision (2^53+1 is not 2^53).
type number struct {
	neg       bool
	int, frac string // the literal's digits, trimmed: int of leading zeros, frac of trailing ones
	exp       int64  // the value is 0.<digits> × 10^exp
}

// maxExp bounds an exponent's magnitude: a non-zero number with a larger
// one is not read (it equals nothing; no claim needs 10^(10^12)). Zero is
// zero whatever its exponent.
const maxExp = 1_000_000_000_000

// parseNumber reads a JSON number literal: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func parseNumber(s string) (number, bool) {
	var n number
	i := 0
	if i < len(s) && s[i] == '-' {
		n.neg = true
		i++
	}
	start := i
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	if i == start || (s[start] == '0' && i-start > 1) {
		return n, false
	}
	intDigits := s[start:i]
	fracDigits := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if i == fs {
			return n, false
		}
		fracDigits = s[fs:i]
	}
	var e int64
	over := false // the exponent is beyond maxExp: only zero is read
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		es := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			if !over {
				if e = e*10 + int64(s[i]-'0'); e > maxExp {
					over = true
				}
			}
			i++
		}
		if i == es {
			return n, false
		}
		if eneg {
			e = -e
		}
	}
	if i != len(s) {
		return n, false
	}
	// Significant digits: leading zeros of int dropped; if int is all
	// zeros, leading zeros of frac shift the exponent.
	var exp int64
	intDigits = strings.TrimLeft(intDigits, "0")
	if intDigits == "" {
		trimmed := strings.TrimLeft(fracDigits, "0")
		exp = -int64(len(fracDigits) - len(trimmed))
		fracDigits = trimmed
	} else {
		exp = int64(len(intDigits))
	}
	fracDigits = strings.TrimRight(fracDigits, "0")
	if fracDigits == "" {
		intDigits = strings.TrimRight(intDigits, "0")
	}
	if intDigits == "" && fracDigits == "" {
		return number{}, true // zero, of either sign, whatever its exponent
	}
	if over {
		return n, false
	}
	n.int, n.frac, n.exp = intDigits, fracDigits, exp+e
	return n, true
}

// equal reports whether a and b are the same number.
func (a number) equal(b number) bool {
	if a.neg != b.neg || a.exp != b.exp || len(a.int)+len(a.frac) != len(b.int)+len(b.frac) {
		return false
	}
	for i := 0; i < len(a.int)+len(a.frac); i++ {
		if a.digit(i) != b.digit(i) {
			return false
		}
	}
	return true
}

func (a number) digit(i int) byte {
	if i < len(a.int) {
		return a.int[i]
	}
	return a.frac[i-len(a.int)]
}
