package server

import (
	"net/http"
	"net/url"
	"strings"
)

// This file reads one named value from a query string or from the Cookie
// headers, the way the most lenient upstream would: a name counts wherever
// any common parser could see it, so that a value is taken only when every
// parser agrees there is exactly one.

// queryParam returns the one value of the parameter name in rawQuery (the
// query as sent, without '?'). The parameter counts in every form a server
// may read it: pairs split at '&' and at ';', names compared after
// percent-decoding ('+' as space) and case-insensitively. Present more than
// once, with a value that holds a ';' or a malformed escape, it is
// ambiguous; present once with an empty value, or absent, it is missing.
func queryParam(rawQuery, name string) (string, tokenState) {
	var value string
	var raw string // the '&'-pair the value came from
	n := 0
	for pair := range strings.SplitSeq(rawQuery, "&") {
		for part := range strings.SplitSeq(pair, ";") {
			k, v, _ := strings.Cut(part, "=")
			if !sameName(k, name, true) {
				continue
			}
			n++
			value, raw = v, pair
		}
	}
	switch {
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

// cookieValue returns the one value of the cookie name in r's Cookie
// headers (all of them). A cookie counts whatever its value (empty, quoted,
// or bytes net/http would drop), with names compared after trimming,
// percent-decoding and case-insensitively: present more than once it is
// ambiguous, whatever the values. Present once with an empty value, or
// absent, it is missing. A value in double quotes loses them (RFC 6265
// §4.1.1).
func cookieValue(r *http.Request, name string) (string, tokenState) {
	var value string
	n := 0
	for _, line := range r.Header["Cookie"] {
		for part := range strings.SplitSeq(line, ";") {
			k, v, _ := strings.Cut(part, "=")
			if !sameName(strings.Trim(k, " \t"), name, false) {
				continue
			}
			n++
			value = strings.Trim(v, " \t")
		}
	}
	switch {
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

// sameName reports whether the name k as sent may be read as name: equal
// ignoring case, as sent or percent-decoded (with '+' as space in a query).
func sameName(k, name string, query bool) bool {
	if strings.EqualFold(k, name) {
		return true
	}
	if !strings.ContainsAny(k, "%+") {
		return false
	}
	var d string
	var err error
	if query {
		d, err = url.QueryUnescape(k)
	} else {
		d, err = url.PathUnescape(k)
	}
	return err == nil && strings.EqualFold(d, name)
}
