// Package textclip cuts text for a log line or an answer to a bound
// without splitting a UTF-8 sequence: what a client or a library wrote can
// be of any length, and a cut inside a sequence leaves invalid UTF-8.
package textclip

import "unicode/utf8"

// Clip returns s cut to at most n bytes, not inside a UTF-8 sequence.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
