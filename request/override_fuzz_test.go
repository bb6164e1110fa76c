package request_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// phpVar reads a query parameter name as PHP 8's php_register_variable_ex
// does (after urldecode): cut at a NUL, leading spaces dropped, ' ' and '.'
// read as '_' up to the first '[' , which starts an array index when a ']'
// closes it (else it is read as '_' and the rest kept, its ' ', '.' and
// '[' read as '_'). ok is false for a name PHP drops.
func phpVar(name string) (base string, array, ok bool) {
	if i := strings.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimLeft(name, " ")
	b := []byte(name)
	open := -1
	for i, c := range b {
		if c == ' ' || c == '.' {
			b[i] = '_'
		} else if c == '[' {
			open = i
			break
		}
	}
	if open == 0 || len(b) == 0 {
		return "", false, false
	}
	if open < 0 {
		return string(b), false, true
	}
	if strings.IndexByte(string(b[open+1:]), ']') >= 0 {
		return string(b[:open]), true, true
	}
	b[open] = '_'
	for i := open + 1; i < len(b); i++ {
		if c := b[i]; c == ' ' || c == '.' || c == '[' {
			b[i] = '_'
		}
	}
	return string(b), false, true
}

// phpUnescape is PHP's urldecode: '+' a space, %XX a byte, a malformed
// escape kept as it is.
func phpUnescape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b = append(b, ' ')
		case c == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]):
			v, _ := url.PathUnescape(s[i : i+3])
			b = append(b, v...)
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// methodToken reports whether m is a method an application would run the
// request as (Symfony: upper-cased, letters only).
func methodToken(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		if c := m[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// FuzzQueryOverrides checks that a request target FromParts accepts lists
// among its methods every method a _method query parameter names to PHP
// (Laravel, Symfony: '&'-separated, PHP's name mangling), to Rack (split
// at '&' and ';', the name exact) and to Go's url.ParseQuery, and that an
// error is ErrAmbiguous*.
func FuzzQueryOverrides(f *testing.F) {
	for _, s := range []string{"_method=DELETE", "a=1;_method=put", "+_method=DELETE", ".method=DELETE", "_method%00x=DELETE",
		"_method[]=DELETE", "%5Fmethod=DELETE", "_method=%44ELETE", "_meth%6Fd=PUT", " .method=PATCH", "_method[x=DELETE",
		"_me.thod=DELETE", "_method]=DELETE", "x[_method=DELETE", "_METHOD=delete", "payment_method=x", "_method=DELETE&_method=PUT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if strings.ContainsAny(q, "#?") {
			return
		}
		o, err := request.FromParts("POST", "", "h", "/o?"+q)
		if err != nil {
			if !errors.Is(err, request.ErrAmbiguous) {
				t.Fatalf("FromParts(?%s) error %v is not ErrAmbiguous", q, err)
			}
			return
		}
		has := func(m string) bool {
			m = request.NormalizeMethod(m)
			for have := range o.Methods() {
				if have == m {
					return true
				}
			}
			return false
		}
		// PHP.
		for pair := range strings.SplitSeq(q, "&") {
			k, v, _ := strings.Cut(pair, "=")
			base, array, ok := phpVar(phpUnescape(k))
			if !ok || base != "_method" {
				continue
			}
			val := phpUnescape(v)
			if array {
				t.Fatalf("FromParts(?%s) = %+v: PHP reads an array _method", q, o)
			}
			if methodToken(val) && !has(val) {
				t.Fatalf("FromParts(?%s) = %+v: PHP reads _method %q", q, o, val)
			}
		}
		// Rack (before 3.0) and Go.
		for _, sep := range []string{"&;", "&"} {
			for pair := range strings.FieldsFuncSeq(q, func(r rune) bool { return strings.ContainsRune(sep, r) }) {
				k, v, _ := strings.Cut(pair, "=")
				key, err1 := url.QueryUnescape(k)
				val, err2 := url.QueryUnescape(v)
				if err1 != nil || err2 != nil || !strings.EqualFold(key, "_method") {
					continue
				}
				if methodToken(val) && !has(val) {
					t.Fatalf("FromParts(?%s) = %+v: _method %q (pairs split at %q)", q, o, val, sep)
				}
			}
		}
	})
}
