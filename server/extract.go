package server

import (
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/internal/asciifold"
)

// This file is the first stage: the credential a call presents. A front
// end that read the token itself hands it over (Call.Token); otherwise it
// is found in the request's headers by the configured token sources, or as
// Authorization: DPoP when an issuer has a DPoP constraint.

// tokenSource is a validated [TokenSource].
type tokenSource struct {
	header string   // canonical header name
	twins  []string // HeaderTwins(header)
	prefix string
	// word is prefix without its trailing spaces when prefix names a
	// scheme of its own ("Token "), held to badWord as Bearer is;
	// "" for no prefix, Bearer, DPoP (badScheme's) or one without a space.
	word   string
	cookie string
	query  string
}

// tokenState says what a request's token sources held.
type tokenState int

const (
	tokenFound     tokenState = iota
	tokenMissing              // no source held a token
	tokenAmbiguous            // the first source present held more than one value
)

// credential is what the extract stage found. It is a value: no later
// stage modifies it.
type credential struct {
	token string
	// err says why there is no token to verify (errNoToken, with missing
	// set; errAmbiguousToken; errMalformedScheme; a front end's read
	// error); nil when token is set.
	err     error
	missing bool
	// dpop reports that the token came as Authorization: DPoP, with
	// proofs, the DPoP header values.
	dpop   bool
	proofs []string
}

// extract returns the credential of c.
func (s *Server) extract(c *Call) credential {
	switch {
	case c.ReadErr != nil:
		return credential{err: c.ReadErr}
	case c.Headers == nil:
		if c.Token == "" {
			return credential{err: errNoToken, missing: true}
		}
		return credential{token: c.Token, dpop: c.DPoP, proofs: c.Proofs}
	}
	// Every check below reads Authorization: it is looked up once.
	auth := values(c.Headers, "Authorization")
	if s.malformedScheme(c.Headers, auth) {
		return credential{err: errMalformedScheme}
	}
	if s.mergedCredential(c.Headers, auth) {
		return credential{err: errAmbiguousToken}
	}
	if !s.readsBearer && bearerIn(auth) {
		return credential{err: errUnreadBearer}
	}
	if !s.readsAuthorization && bareTokenIn(auth) {
		return credential{err: errUnreadAuthorization}
	}
	if dpopRepeated(auth) {
		return credential{err: errAmbiguousToken}
	}
	if tok, ok := dpopToken(auth); ok {
		if s.constraints == nil || s.dpop == nil {
			return credential{err: errDPoPOff}
		}
		if s.otherToken(c, auth, 0, tok) {
			return credential{err: errAmbiguousToken}
		}
		return credential{token: tok, dpop: true, proofs: values(c.Headers, "Dpop")}
	}
	switch tok, st := s.sourcesToken(c, auth); st {
	case tokenFound:
		return credential{token: tok}
	case tokenAmbiguous:
		return credential{err: errAmbiguousToken}
	}
	return credential{err: errNoToken, missing: true}
}

// values returns the values of the header named canonical: h's own map
// when h is an http.Header (no lookup cost on the hot path).
func values(h Headers, canonical string) []string {
	if hh, ok := h.(http.Header); ok {
		return hh[canonical]
	}
	return h.Values(canonical)
}

// sourceValues returns the values of the header named canonical, auth
// (Authorization's, looked up once by extract) when it is Authorization.
func sourceValues(h Headers, auth []string, canonical string) []string {
	if canonical == "Authorization" {
		return auth
	}
	return values(h, canonical)
}

// sourcesToken returns the token of the first source that holds one. A
// header whose value does not start with the source's prefix (Authorization:
// Basic …) holds no token. A source present more than once, in any form a
// proxy or upstream could read (see queryParam, cookieValue), is ambiguous:
// the proxy's upstream could read another value than the one verified; so
// is a later source that holds another token (RFC 6750 §2: one method per
// request), or is itself ambiguous. A query source reads only the query of
// the original request (Call.Original), never another header.
func (s *Server) sourcesToken(c *Call, auth []string) (string, tokenState) {
	for i := range s.sources {
		tok, st := sourceToken(c, auth, &s.sources[i])
		switch {
		case st == tokenMissing:
			continue
		case st == tokenFound && s.otherToken(c, auth, i+1, tok):
			return "", tokenAmbiguous
		}
		return tok, st
	}
	return "", tokenMissing
}

// malformedScheme reports whether Authorization (auth: its values), or a
// header token source,
// holds a value whose scheme is Bearer or DPoP (in any case) that is not
// exactly "<scheme> <token68>" (RFC 6750 §2.1, RFC 9449 §7.1): one space,
// one token. "Bearer\t<jwt>", "Bearer:<jwt>", "Bearer  <jwt>" or a bare
// "Bearer" would otherwise hold no token here, pass an anonymous route as a
// request without one, and reach an application that reads a token in it;
// so would an Authorization value holding "Bearer " after its start
// (embedsBearer).
func (s *Server) malformedScheme(h Headers, auth []string) bool {
	for _, v := range auth {
		if badScheme(v) || embedsBearer(v) {
			return true
		}
	}
	for i := range s.sources {
		src := &s.sources[i]
		if src.header == "" {
			continue
		}
		for _, v := range sourceValues(h, auth, src.header) {
			if (src.header != "Authorization" && badScheme(v)) || badPrefix(v, src) {
				return true
			}
		}
	}
	return false
}

// embedsBearer reports whether the Authorization value v holds the word
// Bearer (in any case) followed by a space or a tab anywhere but as its own
// scheme (which badScheme holds to "Bearer <token68>"): Laravel's
// Request::bearerToken() reads the token after the last "Bearer " in the
// value, wherever it is ("XBearer <jwt>", "Basic dXNlcjpwYXNz Bearer
// <jwt>"), and PHP's common preg_match('/Bearer\s(\S+)/') the first one.
// Such a value held no token here, so an anonymous route passed it and,
// beside a cookie source's token, the application read another token than
// the one verified. A token has no space or tab: for "Bearer <jwt>" this
// costs two IndexByte over the token.
func embedsBearer(v string) bool {
	const word = "Bearer"
	own := len(v) - len(trimAppSpace(v)) // where v's own scheme starts
	for _, sep := range [...]byte{' ', '\t'} {
		for i := 0; i < len(v); {
			j := strings.IndexByte(v[i:], sep)
			if j < 0 {
				break
			}
			j += i
			if j >= len(word) && j-len(word) != own && asciifold.EqualFold(v[j-len(word):j], word) {
				return true
			}
			i = j + 1
		}
	}
	return false
}

// badPrefix reports whether v, a value of the header source src, holds
// src's prefix in a form an application reads and sourceToken does not:
// after bytes an application skips as white space, or (for a prefix that
// is a word and a space, "Token ") the word not followed by exactly one
// space and a token68 character ("Token\t<tok>": Django REST framework's
// split() reads <tok>, where the prefix did not match and an anonymous
// route passed the request as one without a token).
func badPrefix(v string, src *tokenSource) bool {
	if src.word != "" {
		return badWord(v, src.word, false)
	}
	if src.prefix == "" {
		return false
	}
	lead := trimAppSpace(v)
	_, ok := cutPrefixFold(lead, src.prefix)
	return ok && len(lead) != len(v)
}

// mergedCredential reports whether Authorization (auth: its values), or a
// header token source, holds a list: a ',' followed (after spaces or tabs) by a Bearer
// or DPoP credential, or by the source's prefix. Envoy joins a repeated
// header with ',' (the gRPC Check's headers map, and its HTTP authorization
// request): "Basic x,Bearer y" came as two headers, and the application
// may read the second one, which nothing here verified.
func (s *Server) mergedCredential(h Headers, auth []string) bool {
	for _, v := range auth {
		if listsCredential(v, "") {
			return true
		}
	}
	for i := range s.sources {
		if src := &s.sources[i]; src.header != "" && src.header != "Authorization" {
			for _, v := range values(h, src.header) {
				if listsCredential(v, src.prefix) {
					return true
				}
			}
		}
	}
	return false
}

// listsCredential reports whether v holds, after a ',', a Bearer or DPoP
// credential or (when not empty) prefix, in any case. A token holds no
// ',', so the common case costs one IndexByte.
func listsCredential(v, prefix string) bool {
	for {
		i := strings.IndexByte(v, ',')
		if i < 0 {
			return false
		}
		v = trimAppSpace(v[i+1:])
		for _, scheme := range [...]string{"Bearer", "DPoP"} {
			if !asciifold.HasPrefixFold(v, scheme) {
				continue
			}
			rest := v[len(scheme):]
			if rest != "" && isSchemeChar(rest[0]) {
				continue // another word ("Bearerish")
			}
			if strings.HasPrefix(strings.TrimLeft(rest, " \t"), "=") {
				continue // an auth-param of another scheme ("bearer=2")
			}
			return true // "Bearer x", "Bearer:x", a bare "Bearer"
		}
		if _, ok := cutPrefixFold(v, prefix); ok && prefix != "" {
			return true
		}
	}
}

// badScheme reports whether v starts with the Bearer or DPoP auth-scheme
// (a whole token: "Bearerx" is another scheme) and is not followed by
// exactly one space and a token68's first character. It looks at the scheme
// boundary only, in constant time: that is where a credential could be
// read as "no token" here and as a token by the application ("Bearer\t…",
// "Bearer:…", "Bearer  …", a bare "Bearer"). What follows is the token,
// refused by the verifier when it is not one (a JWT with a space or a
// character outside base64url is malformed; an opaque one goes to its
// authorization server); scanning every byte of it here cost the cached
// path a third of its time.
//
// A scheme after bytes an application reads as white space (a no-break
// space 0xA0 or NEL 0x85: Python's str.split() and strip(), JavaScript's
// trim()) is malformed too, and '!' counts as such a byte: Envoy's
// CheckRequest headers map, and the HTTP authorization request built from
// it, hold '!' in place of each byte that is not UTF-8, so "Bearer!<jwt>"
// may be "Bearer\xa0<jwt>" at the application.
//
// A value whose first bytes spell Bearer or DPoP is held to this whatever
// byte follows the name ("BearerX<jwt>", "Bearer-<jwt>"): no registered
// scheme starts so, and go-chi/jwtauth up to v5.3.2 read bearer[7:] after
// comparing only the first six bytes, so the 7th byte was skipped.
func badScheme(v string) bool {
	return badWord(v, "Bearer", true) || badWord(v, "DPoP", true)
}

// badWord reports whether v starts with word (in any case, after bytes an
// application skips as white space) and is not exactly word, one space and
// a token68 character. whole: any byte after the word is held to it; else
// a scheme character after it makes another word ("Tokens").
func badWord(v, word string, whole bool) bool {
	lead := trimAppSpace(v)
	if !asciifold.HasPrefixFold(lead, word) {
		return false
	}
	rest := lead[len(word):]
	if !whole && rest != "" && isSchemeChar(rest[0]) {
		return false // another word whose name starts alike
	}
	return len(lead) != len(v) || len(rest) < 2 || rest[0] != ' ' || !isToken68Char(rest[1])
}

// trimAppSpace returns v without the bytes some application skips as white
// space before an auth-scheme: ' ', '\t', a lone 0x85 or 0xA0 (Latin-1 NEL
// and no-break space, as WSGI and Node decode a header), and '!', Envoy's
// stand-in for a byte that is not UTF-8.
func trimAppSpace(v string) string {
	i := 0
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '!' || v[i] == 0x85 || v[i] == 0xa0) {
		i++
	}
	return v[i:]
}

// isSchemeChar reports whether c continues an auth-scheme's name: a tchar
// but '!', which may be a byte Envoy replaced (see badScheme).
func isSchemeChar(c byte) bool { return c != '!' && isTchar(c) }

// isTchar reports whether c is an RFC 9110 tchar.
func isTchar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isToken68Char reports whether c may start an RFC 9110 token68: ALPHA /
// DIGIT / "-" / "." / "_" / "~" / "+" / "/".
func isToken68Char(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0
}

// otherToken reports whether a source from index start on holds a token
// other than tok, or is ambiguous; auth is Authorization's values.
func (s *Server) otherToken(c *Call, auth []string, start int, tok string) bool {
	for i := start; i < len(s.sources); i++ {
		if t, st := sourceToken(c, auth, &s.sources[i]); st == tokenAmbiguous || (st == tokenFound && t != tok) {
			return true
		}
	}
	return false
}

// sourceToken returns what the one source ts holds in c; auth is
// Authorization's values.
func sourceToken(c *Call, auth []string, ts *tokenSource) (string, tokenState) {
	switch {
	case ts.header != "":
		for _, t := range ts.twins {
			if len(values(c.Headers, t)) > 0 {
				return "", tokenAmbiguous
			}
		}
		vals := sourceValues(c.Headers, auth, ts.header)
		if len(vals) == 0 {
			return "", tokenMissing
		}
		if len(vals) > 1 {
			return "", tokenAmbiguous
		}
		tok, ok := cutPrefixFold(vals[0], ts.prefix)
		switch {
		case !ok && ts.header != "Authorization" && vals[0] != "":
			// A header that only carries the token holds one without
			// the prefix (X-Access-Token: <jwt>): an application that
			// removes the prefix when present reads it; Authorization
			// holds other schemes (Basic).
			return "", tokenAmbiguous
		case !ok && ts.header == "Authorization" && bareToken(vals[0]):
			// Authorization: <jwt>, no scheme: an application that removes
			// the prefix when present reads it as X-Access-Token's above.
			return "", tokenAmbiguous
		case !ok && foldedPrefix(vals[0], ts.prefix):
			// The prefix only to Unicode case folding ("JÉTON " for
			// "Jéton ", "To\u212aen " for "Token "): an application
			// comparing its scheme so reads the token here unread.
			return "", tokenAmbiguous
		case !ok || tok == "":
			return "", tokenMissing
		}
		return tok, tokenFound
	case ts.cookie != "":
		return cookieValue(values(c.Headers, "Cookie"), ts.cookie)
	case ts.query != "":
		o, err := c.original()
		if err != nil {
			return "", tokenMissing
		}
		tok, st := queryParam(o.RawQuery, ts.query)
		if st == tokenFound && mayHoldForm(c.Headers, o.Method) {
			return "", tokenAmbiguous
		}
		return tok, st
	}
	return "", tokenMissing
}

// mayHoldForm reports whether the original request (its headers h and
// method) may carry a form body an application reads parameters from: a
// Content-Type naming a form (application/x-www-form-urlencoded,
// multipart/form-data; in any case, with parameters), or a POST without
// one (Rack reads such a body as a form). RFC 6750 names one parameter,
// access_token, in the query (§2.3) and in a form body (§2.2), and the
// common readers of a request's parameters read the body's first (Go's
// Request.FormValue, as go-oauth2's BearerAuth does; Rack's params;
// oauthlib): a forward-auth call never sees the body, so a query token
// beside one is ambiguous.
func mayHoldForm(h Headers, method string) bool {
	cts := values(h, "Content-Type")
	empty := true
	for _, ct := range cts {
		if strings.TrimSpace(ct) != "" {
			empty = false
		}
		ct = strings.ToLower(ct)
		if strings.Contains(ct, "form-urlencoded") || strings.Contains(ct, "form-data") {
			return true
		}
	}
	return empty && method == "POST"
}

// bareToken reports whether an Authorization value is a token without a
// scheme: no white space, and a dot (a JWS's segments), which no auth
// scheme name holds (Basic, Negotiate, AWS4-HMAC-SHA256 have their
// credentials after a space).
func bareToken(v string) bool {
	return strings.Contains(v, ".") && !strings.ContainsAny(v, " \t")
}

// bareTokenIn reports whether a value of Authorization (auth) is a token
// without a scheme (bareToken).
func bareTokenIn(auth []string) bool {
	for _, v := range auth {
		if bareToken(v) {
			return true
		}
	}
	return false
}

// readsBearer reports whether an Authorization source with prefix reads
// the token of a Bearer credential: prefix is empty or starts "Bearer "
// (in any case). Another prefix ("Token ", "JWT ") finds no token in
// "Bearer <jwt>", which an application reading Bearer credentials reads.
func readsBearer(prefix string) bool {
	const b = "Bearer "
	return asciifold.HasPrefixFold(b, prefix)
}

// bearerIn reports whether a value of Authorization (auth) holds a Bearer
// credential ("Bearer " and something, in any case).
func bearerIn(auth []string) bool {
	for _, v := range auth {
		if tok, ok := cutPrefixFold(v, "Bearer "); ok && tok != "" {
			return true
		}
	}
	return false
}

// dpopRepeated reports whether Authorization (v: its values) is present
// more than once with a DPoP credential among them: dpopToken reads none, and an
// application reads the first line (node:http keeps the first
// authorization line, net/http's Header.Get the first value).
func dpopRepeated(v []string) bool {
	if len(v) < 2 {
		return false
	}
	for _, a := range v {
		if _, ok := cutPrefixFold(trimAppSpace(a), "DPoP"); ok {
			return true
		}
	}
	return false
}

// dpopToken returns the token of an Authorization: DPoP header: exactly one
// Authorization value (of v, its values) with the DPoP scheme.
func dpopToken(v []string) (string, bool) {
	if len(v) != 1 {
		return "", false
	}
	tok, ok := cutPrefixFold(v[0], "DPoP ")
	return tok, ok && tok != ""
}

// maxTwinSeparators bounds the '-' and '_' of a header name whose swaps
// HeaderTwins lists: 2^6 - 1 names at most.
const maxTwinSeparators = 6

// HeaderTwins returns the canonical names of the headers that CGI and
// FastCGI (PHP behind php_fastcgi or php-fpm, WSGI) read as name: name with
// some of its '-' and '_' swapped (X_Token and X-Token are both
// HTTP_X_TOKEN), name itself excluded; nil for a name without either (such
// as Authorization). Only the first six separators are swapped. A header
// token source is ambiguous when one of them is present: an upstream could
// read its value instead of the one verified. The slice is the caller's.
func HeaderTwins(name string) []string {
	var pos []int
	for i := 0; i < len(name) && len(pos) < maxTwinSeparators; i++ {
		if name[i] == '-' || name[i] == '_' {
			pos = append(pos, i)
		}
	}
	if len(pos) == 0 {
		return nil
	}
	self := textproto.CanonicalMIMEHeaderKey(name)
	var out []string
	b := []byte(name)
	for mask := range 1 << len(pos) {
		for j, p := range pos {
			b[p] = "-_"[mask>>j&1]
		}
		if c := textproto.CanonicalMIMEHeaderKey(string(b)); c != self && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// bearerToken returns the token of an Authorization header value
// ("Bearer <token>", scheme compared case-insensitively), or false.
func bearerToken(authorization string) (string, bool) {
	tok, ok := cutPrefixFold(authorization, "Bearer ")
	return tok, ok && tok != ""
}

// foldedPrefix reports whether v begins with prefix to Unicode case
// folding only: its first as many characters as prefix has are prefix to
// strings.EqualFold and not to asciifold.EqualFold (asciifold.Disagree).
// Two spellings of a character may differ in length (the Kelvin sign is
// three bytes, k one), so characters are counted, not bytes. It allocates
// nothing, and only scans when v and prefix are not both ASCII.
func foldedPrefix(v, prefix string) bool {
	i := 0
	for range utf8.RuneCountInString(prefix) {
		if i == len(v) {
			return false
		}
		_, n := utf8.DecodeRuneInString(v[i:])
		i += n
	}
	return asciifold.Disagree(v[:i], prefix)
}

// cutPrefixFold removes prefix (compared ignoring ASCII case, as the
// application's scheme comparison does) and the spaces after it. An empty
// prefix always matches.
func cutPrefixFold(v, prefix string) (string, bool) {
	if !asciifold.HasPrefixFold(v, prefix) {
		return "", false
	}
	return strings.TrimLeft(v[len(prefix):], " "), true
}

// newTokenSources validates the configured token sources, defaults applied.
func newTokenSources(in []TokenSource) ([]tokenSource, error) {
	if len(in) == 0 {
		in = []TokenSource{{Header: "Authorization", Prefix: "Bearer "}}
	}
	out := make([]tokenSource, 0, len(in))
	for i, ts := range in {
		if err := CheckTokenSource(ts); err != nil {
			return nil, fmt.Errorf("%w: token source %d: %w", ErrInvalidOptions, i, err)
		}
		out = append(out, tokenSource{
			header: textproto.CanonicalMIMEHeaderKey(ts.Header),
			twins:  HeaderTwins(ts.Header),
			prefix: ts.Prefix,
			word:   prefixWord(ts.Prefix),
			cookie: ts.Cookie,
			query:  ts.Query,
		})
	}
	return out, nil
}

// prefixWord returns the word of a prefix that is a word and a space
// ("Token " → "Token"), "" for Bearer and DPoP (badScheme's) and for any
// other prefix.
func prefixWord(prefix string) string {
	w := strings.TrimRight(prefix, " ")
	if w == "" || len(w) == len(prefix) || asciifold.EqualFold(w, "Bearer") || asciifold.EqualFold(w, "DPoP") {
		return ""
	}
	for i := range len(w) {
		if !isTchar(w[i]) {
			return ""
		}
	}
	return w
}
