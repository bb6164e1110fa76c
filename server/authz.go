package server

import (
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// This file is forward-auth (/v1/authz): where a request's token is, the
// claim headers of each configured issuer, and the answer written for a
// decision.

// tokenSource is a validated [TokenSource].
type tokenSource struct {
	header string   // canonical header name
	twins  []string // HeaderTwins(header)
	prefix string
	cookie string
	query  string
}

// tokenState says what a request's token sources held.
type tokenState int

const (
	tokenFound     tokenState = iota
	tokenMissing              // no source held a token
	tokenAmbiguous            // the first source present held more than one value
	tokenMalformed            // a Bearer or DPoP credential not exactly "<scheme> <token>"
)

// err is the malformed error of an ambiguous or malformed state.
func (st tokenState) err() error {
	if st == tokenMalformed {
		return errMalformedScheme
	}
	return errAmbiguousToken
}

// queryFrom says where a request's query token source reads the query.
type queryFrom int

const (
	// queryOriginal: the original request that the forward_auth.proxy
	// preset names (request.Proxy.From); none when the preset is unset or
	// its headers are missing.
	queryOriginal queryFrom = iota
	// queryOwn: the request itself is the original (Middleware).
	queryOwn
	// queryGiven: the caller read the original query (gRPC Check).
	queryGiven
)

// tokenFromRequest returns the token of the first source that holds one. A
// header whose value does not start with the source's prefix (Authorization:
// Basic …) holds no token. A source present more than once, in any form a
// proxy or upstream could read (see queryParam, cookieValue), is ambiguous:
// the proxy's upstream could read another value than the one verified; so
// is a later source that holds another token (RFC 6750 §2: one method per
// request), or is itself ambiguous. A query source reads only the query of
// the original request (from says where it is; given is the query for
// queryGiven), never another header.
func (s *Server) tokenFromRequest(r *http.Request, from queryFrom, given string) (string, tokenState) {
	if s.malformedScheme(r.Header) {
		return "", tokenMalformed
	}
	for i := range s.sources {
		tok, st := s.sourceToken(r, &s.sources[i], from, given)
		switch {
		case st == tokenMissing:
			continue
		case st == tokenFound && s.otherToken(r, i+1, tok, from, given):
			return "", tokenAmbiguous
		}
		return tok, st
	}
	return "", tokenMissing
}

// malformedScheme reports whether Authorization, or a header token source,
// holds a value whose scheme is Bearer or DPoP (in any case) that is not
// exactly "<scheme> <token68>" (RFC 6750 §2.1, RFC 9449 §7.1): one space,
// one token. "Bearer\t<jwt>", "Bearer:<jwt>", "Bearer  <jwt>" or a bare
// "Bearer" would otherwise hold no token here, pass an anonymous route as a
// request without one, and reach an application that reads a token in it.
func (s *Server) malformedScheme(h http.Header) bool {
	for _, v := range h["Authorization"] {
		if badScheme(v) {
			return true
		}
	}
	for i := range s.sources {
		if hd := s.sources[i].header; hd != "" && hd != "Authorization" {
			for _, v := range h[hd] {
				if badScheme(v) {
					return true
				}
			}
		}
	}
	return false
}

// badScheme reports whether v starts with the Bearer or DPoP auth-scheme
// (a whole token: "Bearerx" is another scheme) and is not followed by
// exactly one space and a token68.
func badScheme(v string) bool {
	for _, scheme := range [...]string{"Bearer", "DPoP"} {
		if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
			continue
		}
		rest := v[len(scheme):]
		if rest != "" && isTchar(rest[0]) {
			continue // another scheme whose name starts alike
		}
		return len(rest) < 2 || rest[0] != ' ' || !isToken68(rest[1:])
	}
	return false
}

// isTchar reports whether c is an RFC 9110 tchar.
func isTchar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isToken68 reports whether s is an RFC 9110 token68: 1*( ALPHA / DIGIT /
// "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isToken68(s string) bool {
	i := 0
	for i < len(s) {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0 {
			i++
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// otherToken reports whether a source from index start on holds a token
// other than tok, or is ambiguous.
func (s *Server) otherToken(r *http.Request, start int, tok string, from queryFrom, given string) bool {
	for i := start; i < len(s.sources); i++ {
		if t, st := s.sourceToken(r, &s.sources[i], from, given); st == tokenAmbiguous || (st == tokenFound && t != tok) {
			return true
		}
	}
	return false
}

// sourceToken returns what the one source ts holds in r.
func (s *Server) sourceToken(r *http.Request, ts *tokenSource, from queryFrom, given string) (string, tokenState) {
	switch {
	case ts.header != "":
		for _, t := range ts.twins {
			if len(r.Header[t]) > 0 {
				return "", tokenAmbiguous
			}
		}
		vals := r.Header[ts.header]
		if len(vals) == 0 {
			return "", tokenMissing
		}
		if len(vals) > 1 {
			return "", tokenAmbiguous
		}
		tok, ok := cutPrefixFold(vals[0], ts.prefix)
		if !ok || tok == "" {
			return "", tokenMissing
		}
		return tok, tokenFound
	case ts.cookie != "":
		return cookieValue(r, ts.cookie)
	case ts.query != "":
		q, ok := s.originalQuery(r, from, given)
		if !ok {
			return "", tokenMissing
		}
		return queryParam(q, ts.query)
	}
	return "", tokenMissing
}

// originalQuery returns the raw query of the request a forward-auth call
// decides, and false when it is not known.
func (s *Server) originalQuery(r *http.Request, from queryFrom, given string) (string, bool) {
	switch from {
	case queryOwn:
		return r.URL.RawQuery, true
	case queryGiven:
		return given, true
	}
	o, err := s.proxy.From(r, authzPath)
	if err != nil {
		return "", false
	}
	return o.RawQuery, true
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

// cutPrefixFold removes prefix (compared case-insensitively) and the spaces
// after it. An empty prefix always matches.
func cutPrefixFold(v, prefix string) (string, bool) {
	if len(v) < len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimLeft(v[len(prefix):], " "), true
}

// issuerInfo is what the server keeps of one configured issuer, found by
// its configured name: the name the verifier answers with
// (Result.ConfiguredIssuer, verify.Error.Issuer).
type issuerInfo struct {
	name    string // the configured issuer string: the metrics label
	keys    *cache.Keys
	leeway  time.Duration // the verifier's, defaults applied; 0 none
	headers []claimHeader // sorted by claim
	// answer is headers and then every other identity header with no
	// claim: what an allowed answer for the issuer's token sets.
	answer []claimHeader
	// introspector answers the issuer's opaque tokens, or nil; trustDomain
	// is the SPIFFE trust domain of a SPIFFE issuer, or "". /v1/issuers
	// shows both.
	introspector verify.Introspector
	trustDomain  string
}

// claimHeader maps one extracted claim to a forward-auth response header.
type claimHeader struct {
	claim  string // "": none, the header is always sent empty
	header string // canonical
}

// label returns the issuer's label: its configured string, or
// [UnknownIssuer] for nil.
func (is *issuerInfo) label() string {
	if is == nil {
		return UnknownIssuer
	}
	return is.name
}

// newIssuers returns the configured issuers in order, and by name.
func newIssuers(issuers []verify.Issuer) ([]*issuerInfo, map[string]*issuerInfo, error) {
	list := make([]*issuerInfo, 0, len(issuers))
	byName := make(map[string]*issuerInfo, len(issuers))
	for _, vi := range issuers {
		if vi.Keys == nil {
			return nil, nil, fmt.Errorf("%w: issuer %q has no Keys", ErrInvalidOptions, vi.Issuer)
		}
		is := &issuerInfo{name: vi.Issuer, keys: vi.Keys, introspector: vi.Introspector, trustDomain: vi.TrustDomain,
			leeway: max(vi.Leeway, 0)}
		list = append(list, is)
		byName[vi.Issuer] = is
	}
	return list, byName, nil
}

// setClaimHeaders validates the claims_to_headers configuration against the
// configured issuers and the claims the verifier extracts.
func (s *Server) setClaimHeaders(cfg map[string]map[string]string, issuers []verify.Issuer) error {
	for name, m := range cfg {
		is := s.byName[name]
		if is == nil {
			return fmt.Errorf("%w: claims_to_headers names issuer %q, which is not configured", ErrInvalidOptions, name)
		}
		var extracted []string
		for _, vi := range issuers {
			if vi.Issuer == name {
				extracted = vi.ExtractClaims
			}
		}
		seen := make(map[string]string, len(m))
		for claim, header := range m {
			if err := CheckClaimHeader(header); err != nil {
				return fmt.Errorf("%w: issuer %q: claim %q: %w", ErrInvalidOptions, name, claim, err)
			}
			if !slices.Contains(extracted, claim) {
				return fmt.Errorf("%w: issuer %q: claim %q is not extracted by the verifier (ExtractClaims)", ErrInvalidOptions, name, claim)
			}
			h := textproto.CanonicalMIMEHeaderKey(header)
			if other, dup := seen[h]; dup {
				return fmt.Errorf("%w: issuer %q: claims %q and %q map to the same header %q", ErrInvalidOptions, name, other, claim, h)
			}
			seen[h] = claim
			is.headers = append(is.headers, claimHeader{claim: claim, header: h})
		}
		slices.SortFunc(is.headers, func(a, b claimHeader) int { return strings.Compare(a.claim, b.claim) })
	}
	return nil
}

// serveAuthz is forward-auth: /v1/authz and /v1/authz/*, any method. Allow
// is exactly 200 with an empty body and the claim headers; deny is 401 with
// the RFC 6750 challenge; 503 only when keys are unavailable. It never reads
// the request body.
func (s *Server) serveAuthz(w http.ResponseWriter, r *http.Request) {
	if !s.authorizes {
		s.writeForwardAuth(w, s.DecideRequest(r, EndpointAuthz))
		return
	}
	o, err := s.proxy.From(r, authzPath)
	s.writeForwardAuth(w, s.AuthorizeRequest(r, EndpointAuthz, Selection{Original: o, OriginalErr: err}))
}

// writeForwardAuth writes the forward-auth answer of d: 200 with the claim
// headers, or the denial (401, 403, 503).
func (s *Server) writeForwardAuth(w http.ResponseWriter, d Decision) {
	if !d.Allowed() {
		s.writeDenial(w, d)
		return
	}
	h := w.Header()
	if len(d.headers) > 0 {
		// One backing array for every claim header: one allocation.
		vals := make([]string, len(d.headers))
		for i, ch := range d.headers {
			vals[i] = d.claimValue(ch.claim) // "" for an anonymous request
			h[ch.header] = vals[i : i+1 : i+1]
		}
	}
	if d.RemoveAuthorization {
		h["X-Envoy-Auth-Headers-To-Remove"] = s.static.stripAuthz
	}
	h["Cache-Control"] = s.static.noStore
	w.WriteHeader(http.StatusOK)
}

// writeDenial writes a 401, 403 or 503 for a request that was not allowed,
// with the challenge and the body ({"valid":false,"error":CLASS}, or for a
// 403 {"valid":true,"allowed":false,"error":"forbidden"}).
func (s *Server) writeDenial(w http.ResponseWriter, d Decision) {
	h := w.Header()
	if d.www != nil {
		h["Www-Authenticate"] = d.www
	}
	h["Content-Type"] = s.static.json
	h["X-Content-Type-Options"] = s.static.nosniff
	h["Cache-Control"] = s.static.noStore
	w.WriteHeader(d.Status)
	_, _ = w.Write(d.Body)
}
