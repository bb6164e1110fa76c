// Package asciifold compares protocol words ignoring ASCII case only, as
// the programs that read them again do: net/http and x/net/http/httpguts
// (header names, Connection and Upgrade tokens), Envoy (header names),
// JOSE libraries (typ, a media type: RFC 7515 §4.1.9), RFC 9110's
// case-insensitive tokens and auth schemes.
//
// strings.EqualFold folds Unicode: "ſ" (U+017F) is "s" and "K" (U+212A,
// the Kelvin sign) is "k" to it, so "webſocket" is "websocket" and
// "ſecevent+jwt" a SET. A word those readers take for another must not be
// that word here: EqualFold and HasPrefixFold say what they say.
// Disagree names the spellings two readers fold apart, for a check that
// refuses what could be read as a word by one reader and not by another.
//
// Every function is pure and safe for concurrent use.
package asciifold

import "strings"

// EqualFold reports whether s and t are equal ignoring the case of ASCII
// letters: A–Z and a–z, nothing else. Every other byte (a byte of a
// character that is not ASCII included) must be the same. It allocates
// nothing and costs no more than strings.EqualFold on ASCII input.
func EqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s) && i < len(t); i++ { // both bounds: no bounds check
		a, b := s[i], t[i]
		if a == b {
			continue
		}
		if a > b {
			a, b = b, a
		}
		// a is the upper-case letter of lower-case b, or they differ.
		if a < 'A' || a > 'Z' || b != a+'a'-'A' {
			return false
		}
	}
	return true
}

// HasPrefixFold reports whether s begins with prefix ignoring the case of
// ASCII letters ([EqualFold] on s's first len(prefix) bytes).
func HasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && EqualFold(s[:len(prefix)], prefix)
}

// ToLower returns s with its ASCII letters lower-cased, every other byte
// kept: strings.ToLower maps the Kelvin sign (U+212A) to "k" and "İ"
// (U+0130) to "i̇", which a reader lower-casing ASCII (Envoy, nginx, a
// DNS resolver) does not. s itself when it has no upper-case letter.
func ToLower(s string) string {
	i := 0
	for i < len(s) && (s[i] < 'A' || s[i] > 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Disagree reports whether strings.EqualFold (Unicode simple folding: Go's
// encoding/json matching names, Java's equalsIgnoreCase, .NET's
// OrdinalIgnoreCase for "ſ") says s and t are equal and [EqualFold] says
// they are not: one reader takes s for t, another does not ("acceſs_token"
// and "access_token", "webſocket" and "websocket"). Two ASCII strings
// never disagree, at the cost of one scan for a byte above 0x7f.
func Disagree(s, t string) bool {
	if ascii(s) && ascii(t) {
		return false
	}
	return strings.EqualFold(s, t) && !EqualFold(s, t)
}

// ascii reports whether s holds ASCII bytes only.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
