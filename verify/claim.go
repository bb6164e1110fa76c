package verify

import (
	"iter"
	"strings"
	"unsafe"
)

// This file lets the layers above the verifier (authorization policies)
// read claims of a verified token without decoding the whole claims set:
// the same scanner that validated it finds one member, in one pass and
// without allocating.

// Claim returns the JSON text of the top-level claim name of r.Claims (a
// string literal with its quotes, a number, an array, …) and whether it is
// present. The verifier refuses claims sets with duplicate names, so there
// is at most one. The returned string shares r.Claims' memory (r is
// immutable). It never allocates unless a member name holds escapes. It is
// safe for concurrent use.
func (r *Result) Claim(name string) (string, bool) {
	var v [1]string
	names := [1]string{name}
	if r.ClaimValues(names[:], v[:]) == 0 {
		return "", false
	}
	return v[0], true
}

// ClaimValues finds, in one pass over r.Claims, the top-level claims named
// in names: out[i] is set to the JSON text of names[i] ("" when absent; a
// present claim is never ""). It returns how many it found. out must be at
// least as long as names. A claims set that does not scan (a Result not
// made by the verifier) finds nothing. It allocates only when a member name
// holds escapes.
//
// It relies on the verifier having validated the claims set (JSON, UTF-8,
// no duplicate names): it skips values without validating them again,
// which makes it several times faster than the verifier's scanner.
func (r *Result) ClaimValues(names []string, out []string) int {
	clear(out[:len(names)])
	if len(r.Claims) == 0 || len(names) == 0 {
		return 0
	}
	// r.Claims is never modified once the Result is returned, so a string
	// over its bytes is a read-only view, not a copy.
	s := unsafe.String(unsafe.SliceData(r.Claims), len(r.Claims))
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return 0
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return 0
	}
	found := 0
	for i < len(s) && s[i] == '"' {
		ke := skipString(s, i)
		if ke < 0 {
			return 0
		}
		name := s[i+1 : ke-1]
		if strings.IndexByte(name, '\\') >= 0 {
			name = unescape(name)
		}
		i = skipWS(s, ke)
		if i >= len(s) || s[i] != ':' {
			return 0
		}
		vs := skipWS(s, i+1)
		ve := skipValue(s, vs)
		if ve < 0 {
			return 0
		}
		for j, n := range names {
			if n == name && out[j] == "" {
				out[j] = s[vs:ve]
				found++
			}
		}
		i = skipWS(s, ve)
		if i >= len(s) || s[i] != ',' {
			break
		}
		i = skipWS(s, i+1)
	}
	if i >= len(s) || s[i] != '}' {
		clear(out[:len(names)])
		return 0
	}
	return found
}

// skipString returns the index after the JSON string starting at the
// quote s[i], or -1 when it does not end.
func skipString(s string, i int) int {
	i++
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		n := 0 // backslashes right before the quote: odd escapes it
		for k := i - 1; s[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
		i++
	}
}

// skipValue returns the index after the JSON value starting at s[i], or -1
// when it does not end. It does not validate the value.
func skipValue(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				if i = skipString(s, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	case ',', '}', ']', ':':
		return -1
	}
	for j := i; j < len(s); j++ {
		switch s[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
	}
	return -1
}

// JSONString returns the value of v when v is a JSON string literal (as
// [Result.Claim] returns one), unescaped, and false for any other value. It
// allocates only when the string holds escapes.
func JSONString(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	m := members{s: v}
	if _, err := m.str(); err != nil || m.i != len(v) {
		return "", false
	}
	return unescape(v[1 : len(v)-1]), true
}

// JSONElements yields the JSON text of each element of v when v is a JSON
// array, and nothing for any other value (or invalid JSON: it stops at the
// first element that does not scan). It does not allocate.
func JSONElements(v string) iter.Seq[string] {
	return func(yield func(string) bool) {
		if len(v) < 2 || v[0] != '[' {
			return
		}
		m := members{s: v, i: 1}
		m.ws()
		if m.i < len(v) && v[m.i] == ']' {
			return
		}
		for {
			m.ws()
			start := m.i
			if m.value(2) != nil {
				return
			}
			if !yield(v[start:m.i]) {
				return
			}
			m.ws()
			if m.i >= len(v) || v[m.i] != ',' {
				return
			}
			m.i++
		}
	}
}
