package server

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/internal/asciifold"
)

// This file reads one named value from a query string or from the Cookie
// headers, the way the most lenient upstream would: a name counts wherever
// any common parser could see it, so that a value is taken only when every
// parser agrees there is exactly one.

// queryParam returns the one value of the parameter name in rawQuery (the
// query as sent, without '?'). The parameter counts in every form a server
// may read it: pairs split at '&' and at ';', names compared after
// percent-decoding ('+' as space) and case-insensitively. Present more than
// once, with a value that holds a ';' or a malformed escape, or under a name
// only PHP or qs reads as name (phpSame, qsSame), it is ambiguous; present once with an
// empty value, or absent, it is missing.
func queryParam(rawQuery, name string) (string, tokenState) {
	var value string
	var raw string // the '&'-pair the value came from
	n := 0
	php := false // a name only some parser reads as name
	for pair := range strings.SplitSeq(rawQuery, "&") {
		for part := range strings.SplitSeq(pair, ";") {
			k, v, _ := strings.Cut(part, "=")
			if !sameName(k, name, true) {
				php = php || phpSame(k, name, true) || qsSame(k, name) || foldSame(k, name, true)
				continue
			}
			n++
			value, raw = v, pair
		}
	}
	switch {
	case php:
		return "", tokenAmbiguous
	case n == 0:
		return "", tokenMissing
	case n > 1 || strings.Contains(raw, ";"):
		return "", tokenAmbiguous
	}
	v, err := url.QueryUnescape(value)
	switch {
	case err != nil:
		return "", tokenAmbiguous
	case v == "":
		return "", tokenMissing
	}
	return v, tokenFound
}

// cookieValue returns the one value of the cookie name in the Cookie
// header lines (all of them). A cookie counts whatever its value (empty, quoted,
// or bytes net/http would drop), with names compared after trimming,
// percent-decoding and case-insensitively: present more than once, under a
// name only PHP reads as name (phpSame), or inside another cookie's value
// where a parser splitting at white space or ',' finds it (inValue), it is
// ambiguous, whatever the values. Present once with an empty value, or
// absent, it is missing. A value in double quotes loses them (RFC 6265
// §4.1.1).
func cookieValue(lines []string, name string) (string, tokenState) {
	var value string
	n := 0
	php := false    // a name only some parser reads as name
	spaced := false // white space after '=': net/http keeps it in the value, Python and PHP strip it
	for _, line := range lines {
		for part := range strings.SplitSeq(line, ";") {
			k, v, _ := strings.Cut(part, "=")
			php = php || inValue(v, name)
			if k = strings.Trim(k, " \t"); !sameName(k, name, false) {
				php = php || phpSame(k, name, false) || paddedName(k, name) || foldSame(k, name, false)
				continue
			}
			n++
			spaced = spaced || strings.TrimLeft(v, " \t") != v
			value = strings.Trim(v, " \t")
		}
	}
	switch {
	case php, spaced && n > 0:
		return "", tokenAmbiguous
	case n == 0:
		return "", tokenMissing
	case n > 1:
		return "", tokenAmbiguous
	}
	if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
		value = value[1 : len(value)-1]
	}
	if value == "" {
		return "", tokenMissing
	}
	return value, tokenFound
}

// paddedName reports whether the cookie name k is name between bytes an
// application may drop from a name's ends: a byte of a character that is
// not ASCII (Django decodes the header as UTF-8 and strip()s U+00A0 and
// the other Unicode spaces; a WSGI or Node header is Latin-1, whose 0xA0
// and 0x85 are white space to Python and JavaScript) or '!', Envoy's
// stand-in for a byte that is not UTF-8 (badScheme). "access_token\xc2\xa0"
// is then the cookie access_token to the application and none here.
func paddedName(k, name string) bool {
	t := strings.TrimFunc(k, func(r rune) bool { return r >= utf8.RuneSelf || r == '!' })
	return len(t) != len(k) && strings.EqualFold(strings.Trim(t, " \t"), name)
}

// sameName reports whether the name k as sent may be read as name: equal
// ignoring ASCII case, as sent or percent-decoded (with '+' as space in a
// query).
func sameName(k, name string, query bool) bool {
	return decodedName(k, name, query, asciifold.EqualFold)
}

// foldSame reports whether only Unicode case folding reads the name k as
// sent as name, as sent or percent-decoded: "acceſs_token" (U+017F) is
// access_token to strings.EqualFold, Java's equalsIgnoreCase and .NET's
// OrdinalIgnoreCase, and another name to net/http, PHP and qs.
func foldSame(k, name string, query bool) bool {
	return decodedName(k, name, query, asciifold.Disagree)
}

// decodedName reports whether same(k, name) holds for k as sent or
// percent-decoded.
func decodedName(k, name string, query bool, same func(k, name string) bool) bool {
	if same(k, name) {
		return true
	}
	if !strings.ContainsAny(k, "%+") {
		return false
	}
	d, ok := unescapeName(k, query)
	return ok && same(d, name)
}

// unescapeName percent-decodes a name ('+' as space in a query).
func unescapeName(k string, query bool) (string, bool) {
	var d string
	var err error
	if query {
		d, err = url.QueryUnescape(k)
	} else {
		d, err = url.PathUnescape(k)
	}
	return d, err == nil
}

// phpSame reports whether PHP reads the name k as sent as name in $_GET or
// $_COOKIE when sameName does not: parsers then disagree on whether the
// parameter is there at all, or on which of two values it holds.
func phpSame(k, name string, query bool) bool {
	if !strings.ContainsAny(k, "%+ .[") {
		return false
	}
	d, ok := k, true
	if strings.ContainsAny(k, "%+") {
		d, ok = unescapeName(k, query)
	}
	return ok && strings.ContainsAny(d, " .[\x00") && strings.EqualFold(phpName(d), phpName(name))
}

// qsSame reports whether qs, Express 4's default query parser, reads the
// query name k as sent as name (or as an object or array under name) when
// sameName does not: qs decodes a name ('+' as space) and reads a name that
// starts with a bracket group by that group ("[access_token]",
// "[access_token]]", "%5Baccess_token%5D" are access_token) and "x[…" as x,
// a ']' or not ("access_token[" is the object access_token).
func qsSame(k, name string) bool {
	if !strings.ContainsAny(k, "[%") {
		return false
	}
	d, ok := unescapeName(k, true)
	if !ok {
		return false
	}
	i := strings.IndexByte(d, '[')
	switch {
	case i > 0:
		return strings.EqualFold(d[:i], name)
	case i < 0:
		return false
	}
	inner := d[1:]
	j := strings.IndexAny(inner, "[]")
	return j >= 0 && inner[j] == ']' && strings.EqualFold(inner[:j], name)
}

// phpName is the decoded name k as PHP registers it: cut at its first NUL
// (PHP reads it as a C string: "access_token%00" is access_token), leading
// spaces dropped, ' ' and '.' read as '_', and from the first '[' on the
// base name of an array (x[...]) or, without a closing ']', a '_'.
func phpName(k string) string {
	if i := strings.IndexByte(k, 0); i >= 0 {
		k = k[:i]
	}
	k = strings.TrimLeft(k, " ")
	b := make([]byte, 0, len(k))
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case ' ', '.':
			b = append(b, '_')
		case '[':
			if strings.IndexByte(k[i+1:], ']') >= 0 {
				return string(b)
			}
			return string(append(append(b, '_'), k[i+1:]...))
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// inValue reports whether the cookie value v holds name= after white space
// or a ',': Python's http.cookies splits cookies at white space, Tomcat's
// legacy parser at ',', and each then reads a cookie name there, with white
// space before its '=' too ("x=1 access_token =FORGED" is access_token to
// SimpleCookie).
//
// A name read there ends at the next white space, ',' or '=' (those
// parsers split at the first two), so each byte of v is looked at a bounded
// number of times: a value of many spaces and one '=' at its end was
// scanned from every space to that '=' (quadratic in the header's size).
func inValue(v, name string) bool {
	for {
		i := strings.IndexAny(v, ", \t")
		if i < 0 {
			return false
		}
		v = strings.TrimLeft(v[i:], ", \t")
		j := strings.IndexAny(v, "=, \t")
		if j < 0 {
			return false
		}
		k := v[:j]
		v = v[j:]
		if rest := strings.TrimLeft(v, " \t"); rest != "" && rest[0] == '=' && (sameName(k, name, false) || phpSame(k, name, false) || foldSame(k, name, false)) {
			return true
		}
	}
}
