package verify

import (
	"iter"
	"unsafe"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
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

// ClaimValues finds the top-level claims named in names: out[i] is set
// to the JSON text of names[i] ("" when absent; a present claim is never
// ""). It returns how many it found. out must be at least as long as names.
// Claims the verifier indexed (Options.IndexClaims) are read from the index;
// otherwise it makes one pass over r.Claims. A claims set that does not scan
// (a Result not made by the verifier) finds nothing. It allocates only when
// more than 8 names are not indexed, or a member name holds escapes.
//
// It relies on the verifier having validated the claims set (JSON, UTF-8,
// no duplicate names): it skips values without validating them again.
func (r *Result) ClaimValues(names []string, out []string) int {
	clear(out[:len(names)])
	if len(r.Claims) == 0 || len(names) == 0 {
		return 0
	}
	// r.Claims is never modified once the Result is returned, so a string
	// over its bytes is a read-only view, not a copy.
	s := unsafe.String(unsafe.SliceData(r.Claims), len(r.Claims))
	found, all := 0, true
	for j, n := range names {
		k := indexOf(r.idxNames, n)
		if k < 0 {
			all = false
			break
		}
		if sp := r.idxSpans[k]; sp.end > 0 && int(sp.end) <= len(s) {
			out[j] = s[sp.start:sp.end]
			found++
		}
	}
	if all {
		return found
	}
	var buf [8]claimSpan
	var spans []claimSpan
	if len(names) <= len(buf) {
		spans = buf[:len(names)]
	} else {
		spans = make([]claimSpan, len(names))
	}
	found = scanClaims(s, names, spans)
	for j, sp := range spans {
		out[j] = ""
		if sp.end > 0 {
			out[j] = s[sp.start:sp.end]
		}
	}
	return found
}

func indexOf(list []string, s string) int {
	for i := range list {
		if list[i] == s {
			return i
		}
	}
	return -1
}

// claimSpan is where a claim's value is in a claims set; end 0: absent.
type claimSpan struct{ start, end uint32 }

// scanClaims makes one pass over the claims set s and records in spans[i]
// where the value of names[i] is. It returns how many it found; a set that
// does not scan finds nothing (every span cleared).
func scanClaims(s string, names []string, spans []claimSpan) int {
	clear(spans)
	if len(s) > 1<<31 {
		return 0
	}
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
			clear(spans)
			return 0
		}
		name := s[i+1 : ke-1]
		if hasByte(name, '\\') {
			name = unescape(name)
		}
		i = skipWS(s, ke)
		if i >= len(s) || s[i] != ':' {
			clear(spans)
			return 0
		}
		vs := skipWS(s, i+1)
		ve := skipValue(s, vs)
		if ve < 0 {
			clear(spans)
			return 0
		}
		for j, n := range names {
			if n == name && spans[j].end == 0 {
				spans[j] = claimSpan{uint32(vs), uint32(ve)}
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
		clear(spans)
		return 0
	}
	return found
}

// skipString returns the index after the JSON string starting at the
// quote s[i], or -1 when it does not end. A plain loop: claim names and
// values are short, where a call per string costs more than the scan.
func skipString(s string, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '"':
			return i + 1
		case '\\':
			i++ // the escaped byte (of \" too) cannot end the string
		}
	}
	return -1
}

func hasByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
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
// [Result.ClaimValues] returns one), unescaped, and false for any other
// value. It allocates only when the string holds escapes. It does not check
// that v is valid UTF-8 (the verifier did).
func JSONString(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	plain := true
	for i := 0; i < len(in); i++ {
		if c := in[i]; c == '"' || c < 0x20 {
			plain = false // an unescaped quote or a control: not one string
			break
		} else if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return in, true
	}
	return jsonscan.String(v)
}

// JSONElements yields the JSON text of each element of v when v is a JSON
// array, and nothing for any other value (or invalid JSON: it stops at the
// first element that does not scan). It does not allocate.
func JSONElements(v string) iter.Seq[string] { return jsonscan.Elements(v) }
