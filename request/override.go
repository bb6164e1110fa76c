package request

import (
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/jwksverify/jwksverify/internal/asciifold"
)

// OverrideHeaders returns the method-override headers that frameworks read
// (Rails' Rack::MethodOverride and Express's method-override read the
// first, Symfony and Laravel the first too, ASP.NET and others the second
// and third). A header whose name equals one of them ignoring case and the
// difference between '-' and '_' counts as it: a CGI or WSGI upstream reads
// X_HTTP_Method_Override as HTTP_X_HTTP_METHOD_OVERRIDE.
// The slice is the caller's.
func OverrideHeaders() []string { return slices.Clone(overrideHeaders[:]) }

// overrideHeaders are [OverrideHeaders], fixed.
var overrideHeaders = [...]string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"}

// ForwardedHeaders returns the headers applications read the request's
// host, scheme, port, method or path from (Flask's ProxyFix, Rails,
// Express's trust proxy, Django's USE_X_FORWARDED_HOST, IIS's
// X-Original-URL), and what every proxy file jwksverify writes does about
// them: set, the ones it sets to what jwksverify decided on (the host as the
// proxy read it, the scheme of the client's connection); removed, the ones
// it removes as the client's. A claim header may be none of them
// (server.CheckClaimHeader). The slices are the caller's.
func ForwardedHeaders() (set, removed []string) {
	return slices.Clone(forwardedSet[:]), slices.Clone(forwardedRemoved[:])
}

// forwardedSet and forwardedRemoved are [ForwardedHeaders], fixed.
var (
	forwardedSet     = [...]string{"X-Forwarded-Host", "X-Forwarded-Proto"}
	forwardedRemoved = [...]string{"Forwarded", "X-Forwarded-Method", "X-Forwarded-Port", "X-Forwarded-Prefix", "X-Forwarded-Scheme", "X-Forwarded-Server",
		"X-Forwarded-Ssl", "X-Forwarded-Uri", "X-Host", "X-Scheme", "X-Url-Scheme", "Front-End-Https",
		"X-Original-Host", "X-Original-Method", "X-Original-Proto", "X-Original-Uri", "X-Original-Url", "X-Rewrite-Url"}
)

// IsForwardedHeader reports whether name, in canonical form
// (textproto.CanonicalMIMEHeaderKey), is one of [ForwardedHeaders].
func IsForwardedHeader(name string) bool {
	return slices.Contains(forwardedSet[:], name) || slices.Contains(forwardedRemoved[:], name)
}

// MaxOverrides is the most methods a request's overrides may name besides
// its own: more is [ErrAmbiguousMethod]. No application runs a request as
// more than one other method, and each one named is a policy choice more
// (thousands of distinct _method values in one query cost a request a
// second of CPU).
const MaxOverrides = 8

// overrideParam is the query parameter that Laravel, Symfony and Rails
// (from a form body, which jwksverify cannot see) read the method from.
const overrideParam = "_method"

// WithHeaderOverrides returns o with the methods that the override headers
// among headers name added to [Original.Overrides]. A value that is not a
// method token (RFC 9110 §9.1: one token, no list) is [ErrAmbiguousMethod].
// gRPC Check passes Envoy's header map; [Proxy.From] the auth call's
// headers, which carry the client's.
func (o Original) WithHeaderOverrides(headers iter.Seq2[string, string]) (Original, error) {
	for name, v := range headers {
		if !isOverrideHeader(name) {
			continue
		}
		var err error
		if o, err = o.withOverride(v); err != nil {
			return Original{}, fmt.Errorf("%w: header %s", err, name)
		}
	}
	return o, nil
}

// withHTTPOverrides is [Original.WithHeaderOverrides] for an http.Header,
// without an iterator's indirect call per header: it runs on every
// forward-auth request.
func (o Original) withHTTPOverrides(h http.Header) (Original, error) {
	for name, vs := range h {
		if !isOverrideHeader(name) {
			continue
		}
		for _, v := range vs {
			var err error
			if o, err = o.withOverride(v); err != nil {
				return Original{}, fmt.Errorf("%w: header %s", err, name)
			}
		}
	}
	return o, nil
}

// withQueryOverrides adds the methods that _method query parameters name.
// A parameter counts when its name, percent-decoded with '+' as a space,
// is _method in any case once PHP's mangling is applied (cut at a NUL,
// leading spaces dropped, ' ', '.' and '[' read as '_': PHP hands
// ".method" and "_method%00" to Laravel as "_method"); "_method[...]" (an array to the framework) is ambiguous, as is
// a name that cannot be decoded but spells "method". Pairs are split at '&'
// and ';' (Rack before 3.0 splits at both).
func (o Original) withQueryOverrides(query string) (Original, error) {
	if !containsFold(query, "method") && !strings.Contains(query, "%") {
		return o, nil // the common case: nothing that could decode to _method
	}
	for pair := range strings.FieldsFuncSeq(query, func(r rune) bool { return r == '&' || r == ';' }) {
		rawKey, rawVal, _ := strings.Cut(pair, "=")
		key, ok := unescapeQuery(rawKey)
		if !ok {
			if containsFold(rawKey, "method") || strings.Contains(rawKey, "%") {
				return Original{}, fmt.Errorf("%w: query parameter name %q cannot be decoded", ErrAmbiguousMethod, rawKey)
			}
			continue
		}
		key = phpName(key)
		switch {
		case asciifold.EqualFold(key, overrideParam):
		case len(key) > len(overrideParam) && asciifold.HasPrefixFold(key, overrideParam) && key[len(overrideParam)] == '[':
			return Original{}, fmt.Errorf("%w: query parameter %s is an array", ErrAmbiguousMethod, overrideParam)
		default:
			continue
		}
		val, ok := unescapeQuery(rawVal)
		if !ok {
			return Original{}, fmt.Errorf("%w: query parameter %s cannot be decoded", ErrAmbiguousMethod, overrideParam)
		}
		var err error
		if o, err = o.withOverride(val); err != nil {
			return Original{}, fmt.Errorf("%w: query parameter %s", err, overrideParam)
		}
	}
	return o, nil
}

// withOverride adds method m to o.Overrides (kept sorted), unless it is
// o.Method or listed already.
func (o Original) withOverride(m string) (Original, error) {
	if !isToken(m) || strings.IndexByte(m, '!') >= 0 {
		// '!' is a token character no method has, and what Envoy's
		// CheckRequest headers map (and so its HTTP authorization
		// request) holds in place of each byte that is not UTF-8:
		// "DELETE!" may be "DELETE\xa0", which is no token here and
		// DELETE to an application that trims a no-break space
		// (Express's method-override).
		return Original{}, fmt.Errorf("%w: not a method token", ErrAmbiguousMethod)
	}
	m = NormalizeMethod(m)
	for have := range o.Methods() {
		if have == m {
			return o, nil
		}
	}
	if o.Overrides != "" && strings.Count(o.Overrides, " ")+1 >= MaxOverrides {
		return Original{}, fmt.Errorf("%w: more than %d methods named besides the request's", ErrAmbiguousMethod, MaxOverrides)
	}
	// Sorted, so that the same request gives the same Original whatever
	// order a header map is read in.
	ms := append(strings.Fields(o.Overrides), m)
	slices.Sort(ms)
	o.Overrides = strings.Join(ms, " ")
	return o, nil
}

// isOverrideHeader reports whether name is one of [OverrideHeaders],
// ignoring case and '-' against '_', without allocating.
// IsOverrideHeader reports whether a header named name counts as one of
// [OverrideHeaders] (ignoring case and the difference between '-' and
// '_'), so that a front end reads the value of such a header only.
func IsOverrideHeader(name string) bool { return isOverrideHeader(name) }

func isOverrideHeader(name string) bool {
	switch len(name) {
	case len("X-HTTP-Method-Override"), len("X-HTTP-Method"), len("X-Method-Override"):
	default:
		return false // most headers: one comparison
	}
	for _, h := range overrideHeaders {
		if len(h) != len(name) {
			continue
		}
		same := true
		for i := 0; i < len(h) && same; i++ {
			a, b := lowerDash(h[i]), lowerDash(name[i])
			same = a == b
		}
		if same {
			return true
		}
	}
	return false
}

// lowerDash folds an ASCII letter to lower case and '_' to '-'.
func lowerDash(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	case c == '_':
		return '-'
	}
	return c
}

// containsFold reports whether s holds sub (lower-case ASCII) in any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if asciifold.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// phpName applies PHP's mangling of request variable names: the name cut at
// its first NUL (PHP reads it as a C string: "_method%00" is _method),
// leading spaces dropped, then ' ', '.' and '[' (the first, when no ']'
// closes it) read as '_'. Only what decides whether a name is _method
// matters here, so every '[' after the first character is kept: "_method["
// stays an array name.
func phpName(key string) string {
	if i := strings.IndexByte(key, 0); i >= 0 {
		key = key[:i]
	}
	key = strings.TrimLeft(key, " ")
	if key == "" {
		return key
	}
	b := []byte(key)
	for i, c := range b {
		if c == ' ' || c == '.' || (c == '[' && i == 0) {
			b[i] = '_'
		}
	}
	return string(b)
}

// unescapeQuery decodes a query component: '+' is a space, %XX a byte. It
// reports false for a malformed escape.
func unescapeQuery(s string) (string, bool) {
	if !strings.ContainsAny(s, "%+") {
		return s, true
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b = append(b, ' ')
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "", false
			}
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b), true
}

// isToken reports whether s is a non-empty RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}
