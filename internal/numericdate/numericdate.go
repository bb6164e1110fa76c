// Package numericdate reads a JSON number as a NumericDate (RFC 7519 §2:
// seconds since the epoch, possibly fractional) exactly, to the
// nanosecond, whatever its spelling: with a fraction, an exponent or both,
// of any length. It is the one reader of the project's NumericDates (a
// JWT's exp, nbf, iat and auth_time, a DPoP proof's iat, a SET event's
// event_timestamp, an introspection answer's exp). It reads; each caller
// decides the range it accepts.
//
// strconv.ParseFloat, which every one of them used before, counts at most
// 800 digits before the point: "1" followed by 2 000 zeros and "e-1990"
// (10^10 s, year 2286) read as 10^-191 (1970), and a number 10^1200 times
// now's seconds spelled with 2 000 more zeros read as now. math/big,
// JavaScript and Python read them as the numbers they are, and so does
// Read.
package numericdate

import "time"

// Max is the largest magnitude Read reports, in seconds: a number of 10^18
// seconds or more (beyond every range a caller accepts, year 9999 is about
// 2.5·10^11) reads as Max seconds and 0 nanoseconds.
const Max = 1_000_000_000_000_000_000

// maxDigits is the number of digits before the point that Max has.
const maxDigits = 18

// Value is a JSON number read as seconds: its magnitude truncated to the
// nanosecond (digits past the ninth after the point dropped, as a float64
// would not: it holds 1893553444.9999999999 as 1893553445, an iat moved
// onto a revocation's issued_before, which equal is not before), and its
// sign.
type Value struct {
	// Neg is true when the number is below zero: -1e-400 is, although
	// its magnitude reads as 0; -0 and -0.0e5 are not.
	Neg bool
	// Sec is the magnitude's whole seconds, at most Max.
	Sec int64
	// Nsec is the magnitude's nanoseconds beyond Sec, in [0, 1e9).
	Nsec int64
}

// Time is v as an instant in UTC. The caller bounds v first: time.Time
// holds every Value, but a year beyond 9999 does not format as RFC 3339.
func (v Value) Time() time.Time {
	if v.Neg {
		return time.Unix(-v.Sec, -v.Nsec).UTC()
	}
	return time.Unix(v.Sec, v.Nsec).UTC()
}

// Beyond reports whether v's magnitude is more than sec seconds: a
// caller's bound, such as a DPoP proof's |iat| ≤ 10^11.
func (v Value) Beyond(sec int64) bool {
	return v.Sec > sec || v.Sec == sec && v.Nsec > 0
}

// Read reads v, which must be exactly a JSON number (RFC 8259 §6:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, no white space), and
// reports false for anything else (a string, null, a leading + or 0, an
// empty fraction or exponent). It does not allocate.
func Read(v string) (Value, bool) {
	i, neg := 0, false
	if i < len(v) && v[i] == '-' {
		i, neg = i+1, true
	}
	ip := digits(v, i)
	if ip == "" || len(ip) > 1 && ip[0] == '0' {
		return Value{}, false
	}
	i += len(ip)
	if i == len(v) && len(ip) <= maxDigits {
		// An integer: the common spelling.
		var sec int64
		for k := 0; k < len(ip); k++ {
			sec = sec*10 + int64(ip[k]-'0')
		}
		return Value{Neg: neg && sec != 0, Sec: sec}, true
	}
	var fp string
	if i < len(v) && v[i] == '.' {
		if fp = digits(v, i+1); fp == "" {
			return Value{}, false
		}
		i += 1 + len(fp)
	}
	var exp int64
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		eneg := i < len(v) && v[i] == '-'
		if i < len(v) && (v[i] == '-' || v[i] == '+') {
			i++
		}
		es := digits(v, i)
		if es == "" {
			return Value{}, false
		}
		i += len(es)
		// Saturated past the literal's own length: beyond it every
		// digit lies above Max or below a nanosecond.
		limit := int64(len(v)) + maxDigits + 10
		for k := 0; k < len(es) && exp < limit; k++ {
			exp = exp*10 + int64(es[k]-'0')
		}
		exp = min(exp, limit)
		if eneg {
			exp = -exp
		}
	}
	if i != len(v) {
		return Value{}, false
	}
	r, zero := read(ip, fp, exp)
	r.Neg = neg && !zero
	return r, true
}

// digits is the run of ASCII digits of v starting at i.
func digits(v string, i int) string {
	j := i
	for j < len(v) && v[j] >= '0' && v[j] <= '9' {
		j++
	}
	return v[i:j]
}

// read is the magnitude of the number whose digits are ip, then fp, with
// the point len(ip)+exp digits from their start; zero reports that every
// digit is 0.
func read(ip, fp string, exp int64) (_ Value, zero bool) {
	n := int64(len(ip) + len(fp))
	// digit is the k-th digit of ip followed by fp, 0 past either end.
	digit := func(k int64) int64 {
		switch {
		case k < 0 || k >= n:
			return 0
		case k < int64(len(ip)):
			return int64(ip[k] - '0')
		default:
			return int64(fp[k-int64(len(ip))] - '0')
		}
	}
	first := int64(0) // the first digit that is not 0
	for first < n && digit(first) == 0 {
		first++
	}
	point := int64(len(ip)) + exp // digits before the point
	switch {
	case first == n:
		return Value{}, true
	case point <= first-9:
		return Value{}, false // below a nanosecond
	case point-first > maxDigits:
		return Value{Sec: Max}, false // 10^18 s or more
	}
	var sec, ns int64
	for k := first; k < point; k++ { // at most 18 digits
		sec = sec*10 + digit(k)
	}
	for k := point; k < point+9; k++ {
		ns = ns*10 + digit(k)
	}
	return Value{Sec: sec, Nsec: ns}, false
}
