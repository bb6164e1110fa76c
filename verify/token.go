package verify

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/internal/numericdate"
)

// header is a decoded JOSE header. Immutable once built: it is shared
// through the header cache by every token that carries the same header
// segment.
type header struct {
	raw                  []byte // the decoded JSON, exactly (Result.Header)
	alg, kid, typ        string
	hasAlg, hasTyp, crit bool
	// ignored lists header members that are recognized but deliberately not
	// acted on (jku, x5u: never followed), for Explain.
	ignored string
}

var (
	errAlgType = errors.New("alg is not a string")
	errKidType = errors.New("kid is not a string")
	errTypType = errors.New("typ is not a string")
)

// parseHeader decodes a JOSE header (already base64-decoded) held in raw.
func parseHeader(raw []byte) (*header, error) {
	s := string(raw)
	h := &header{raw: raw}
	it, err := newMembers(s)
	if err != nil {
		return nil, err
	}
	var seen names
	for {
		mb, ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if !seen.add(mb.name) {
			return nil, errDupMember
		}
		v := s[mb.start:mb.end]
		switch mb.name {
		case "alg":
			if v[0] != '"' {
				return nil, errAlgType
			}
			h.alg, h.hasAlg = unescape(v[1:len(v)-1]), true
		case "kid":
			if v[0] != '"' {
				return nil, errKidType
			}
			h.kid = unescape(v[1 : len(v)-1])
		case "typ":
			if v[0] != '"' {
				return nil, errTypType
			}
			h.typ, h.hasTyp = unescape(v[1:len(v)-1]), true
		case "crit":
			h.crit = true
		case "jku", "x5u":
			// Never followed (RFC 8725 §3.10): keys come only from configuration.
			if h.ignored != "" {
				h.ignored += ", "
			}
			h.ignored += mb.name
		}
	}
	return h, nil
}

// claims are the registered claims of a token, decoded without a map.
type claims struct {
	present            uint16 // cl* bits of the registered claims present
	iss, sub, jti, tid string
	// aud is the audience array; a single-string aud is aud1 (audOne set),
	// kept out of a slice so that the common case costs no allocation here.
	aud           []string
	aud1          string
	audOne        bool
	exp, nbf, iat time.Time
	// cnf is the raw cnf claim (RFC 7800), "" when absent; decoded only
	// when present, into Result.Confirmation.
	cnf string
	// events reports an events claim: a logout token or a SET, never an
	// access or ID token (idtoken.go).
	events bool
}

// audHas reports whether the token's aud holds one of want.
func (c *claims) audHas(want []string) bool {
	if c.audOne {
		return slices.Contains(want, c.aud1)
	}
	for _, a := range c.aud {
		if slices.Contains(want, a) {
			return true
		}
	}
	return false
}

// audList returns the aud claim as a list, for messages.
func (c *claims) audList() []string {
	if c.audOne {
		return []string{c.aud1}
	}
	return c.aud
}

func (c *claims) has(bit uint16) bool { return c.present&bit != 0 }

// setTimes copies the time claims that c holds into res.
func (c *claims) setTimes(res *Result) {
	if c.has(clExp) {
		res.ExpiresAt = c.exp
	}
	if c.has(clNbf) {
		res.NotBefore = c.nbf
	}
	if c.has(clIat) {
		res.IssuedAt = c.iat
	}
}

var (
	errStringClaim = errors.New("claim is not a string")
	errAudClaim    = errors.New("aud is neither a string nor an array of strings")
	errDateClaim   = errors.New("time claim is not a number")
)

// parseClaims validates the claims set s (valid JSON object in valid UTF-8,
// depth ≤ 64, no duplicate names) and decodes its registered claims.
func parseClaims(s string, c *claims) error {
	it, err := newMembers(s)
	if err != nil {
		return err
	}
	var seen names
	for {
		mb, ok, err := it.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if !seen.add(mb.name) {
			return errDupMember
		}
		bit := registeredBit(mb.name)
		if bit == 0 {
			switch mb.name {
			case "cnf":
				c.cnf = s[mb.start:mb.end]
			case "events":
				c.events = true
			}
			continue
		}
		v := s[mb.start:mb.end]
		switch bit {
		case clIss, clSub, clJti:
			if v[0] != '"' {
				return errors.New(mb.name + " " + errStringClaim.Error())
			}
			str := unescape(v[1 : len(v)-1])
			switch bit {
			case clIss:
				c.iss = str
			case clSub:
				c.sub = str
			default:
				c.jti = str
			}
		case clTid:
			// tid only routes Entra template issuers; a non-string tid is
			// treated as absent, which fails closed (wrong_issuer).
			if v[0] != '"' {
				continue
			}
			c.tid = unescape(v[1 : len(v)-1])
		case clAud:
			switch v[0] {
			case '"':
				c.aud1, c.audOne = unescape(v[1:len(v)-1]), true
			case '[':
				aud, ok := stringArray(v)
				if !ok {
					return errAudClaim
				}
				c.aud = aud
			default:
				return errAudClaim
			}
		case clExp, clNbf, clIat:
			t, err := numericDate(v)
			if err != nil {
				return errors.New(mb.name + " " + err.Error())
			}
			switch bit {
			case clExp:
				c.exp = t
			case clNbf:
				c.nbf = t
			default:
				c.iat = t
			}
		}
		c.present |= bit
	}
}

// stringArray decodes a validated JSON array whose items must all be strings.
func stringArray(v string) ([]string, bool) {
	var out []string
	i := 1 // after '['
	for {
		i = skipWS(v, i)
		switch v[i] {
		case ']':
			if out == nil {
				out = []string{}
			}
			return out, true
		case ',':
			i = skipWS(v, i+1)
		}
		if v[i] != '"' {
			return nil, false
		}
		end := stringEnd(v, i)
		out = append(out, unescape(v[i+1:end-1]))
		i = end
	}
}

// skipWS returns the index of the first non-white-space byte at or after i.
func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the closing quote of the validated
// string starting at i.
func stringEnd(s string, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(s)
}

// NumericDate bounds: values outside year 1..9999 are clamped (a token that
// expires in year 1e20 expires, for us, at the end of year 9999).
const (
	minNumericDate = -62135596800
	maxNumericDate = 253402300799
)

// numericDate decodes a JSON number (integer or fractional seconds since the
// epoch, RFC 7519 §2) into a UTC time: exactly, to the nanosecond, whatever
// its spelling (internal/numericdate), clamped to years 1..9999.
func numericDate(v string) (time.Time, error) {
	d, ok := numericdate.Read(v)
	switch {
	case !ok:
		return time.Time{}, errDateClaim
	case d.Neg && d.Sec >= -minNumericDate:
		return time.Unix(minNumericDate, 0).UTC(), nil
	case !d.Neg && d.Sec > maxNumericDate:
		return time.Unix(maxNumericDate, 0).UTC(), nil
	}
	return d.Time(), nil
}

// hasMember reports whether the validated object s has a member named name.
func hasMember(s, name string) bool {
	it, err := newMembers(s)
	if err != nil {
		return false
	}
	for {
		mb, ok, err := it.next()
		if err != nil || !ok {
			return false
		}
		if mb.name == name {
			return true
		}
	}
}

// extract renders the named claims of the validated object s for
// Result.Extracted: a value that could not be a header value unchanged is
// "" (see headerValue).
func extract(s string, want []string) map[string]string {
	out := make(map[string]string, len(want))
	it, err := newMembers(s)
	if err != nil {
		return out
	}
	for {
		mb, ok, err := it.next()
		if err != nil || !ok {
			return out
		}
		for _, w := range want {
			if w == mb.name {
				out[w] = headerValue(s[mb.start:mb.end])
				if (w == "scope" || w == "scp") && scopeStringSplits(s[mb.start:mb.end]) {
					// A space-separated scope list (the policy splits it
					// at U+0020 only): a token an application's list split
					// cuts in two would grant it a scope the policy did
					// not, as an array element would (splitsAsList).
					out[w] = ""
				}
				break
			}
		}
	}
}

// headerValue gives a validated JSON value's header form: a string as its
// text, a number as its literal, an array of strings joined by single
// spaces (a space-separated scope list, RFC 8693 §4.2), null as "" (no
// value, as an absent claim), anything else as compact JSON. A value that
// would have to change to become a header value is "", never altered: two
// different claims must never become the same header (ad\u0000min and
// admin, null and "null"). That is a value holding a control
// character, starting or ending with a space, longer than MaxExtractedLen
// bytes, or an array element that a list split could cut (["eng admin"] or
// ["eng\u00a0admin"] would read as ["eng","admin"]: splitsAsList).
func headerValue(v string) string {
	if jsonscan.LoneSurrogate(v) {
		return "" // decodes to U+FFFD, as \ud800, \udfff and \ufffd all do
	}
	var out string
	switch v[0] {
	case 'n':
		// null names no value: sent as an absent claim is (empty), never
		// as the text "null", which is the header of the string "null".
		return ""
	case '"':
		out = unescape(v[1 : len(v)-1])
	case '[':
		items, ok := stringArray(v)
		if !ok {
			out = compact(v)
			break
		}
		for _, it := range items {
			if splitsAsList(it) {
				return ""
			}
		}
		out = strings.Join(items, " ")
	default:
		out = compact(v)
	}
	if len(out) > MaxExtractedLen || strings.HasPrefix(out, " ") || strings.HasSuffix(out, " ") {
		return ""
	}
	for _, r := range out {
		if unicode.IsControl(r) {
			return ""
		}
	}
	return out
}

// scopeStringSplits reports whether the JSON value v is a string whose
// space-separated tokens include one that splitsAsList.
func scopeStringSplits(v string) bool {
	if v == "" || v[0] != '"' {
		return false
	}
	for it := range strings.SplitSeq(unescape(v[1:len(v)-1]), " ") {
		if splitsAsList(it) {
			return true
		}
	}
	return false
}

// splitsAsList reports whether an array element could be cut in two by an
// application splitting the joined header at white space: a space, any
// Unicode white space (Go's strings.Fields, Python's str.split(),
// JavaScript's /\s+/ cut at U+00A0, U+2000..U+200A, U+3000, U+FEFF, ...),
// or a byte 0x85 or 0xA0 of any UTF-8 sequence (à is C3 A0), which is white
// space to Python and Node, which decode header bytes as Latin-1.
func splitsAsList(it string) bool {
	for i := 0; i < len(it); i++ {
		if c := it[i]; c == ' ' || c == 0x85 || c == 0xa0 {
			return true
		}
	}
	for _, r := range it {
		if r >= utf8.RuneSelf && (unicode.IsSpace(r) || r == '\ufeff') {
			return true
		}
	}
	return false
}

// compact removes insignificant white space from validated JSON.
func compact(v string) string {
	var b strings.Builder
	b.Grow(len(v))
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case ' ', '\t', '\n', '\r':
		case '"':
			end := stringEnd(v, i)
			b.WriteString(v[i:end])
			i = end - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// headerCache remembers decoded headers by their base64url segment: an
// issuer's tokens share a handful of distinct headers, so most tokens skip
// decoding theirs. It is bounded in entries and in segment length, and
// holds only headers whose signature a key verified (remember): a flood of
// made-up headers would otherwise push the issuers' few out, and every
// verdict cached meanwhile would hold a header of its own, which the token
// cache's byte estimate counts as shared (headerShared).
type headerCache struct {
	mu sync.RWMutex
	m  map[string]*header
}

const (
	headerCacheEntries = 256
	headerCacheMaxSeg  = 1024
)

func (c *headerCache) get(seg string) *header {
	c.mu.RLock()
	h := c.m[seg]
	c.mu.RUnlock()
	return h
}

// remember puts h, the header of signing (the token's first two
// segments, whose signature a key verified), unless it is there already.
func (c *headerCache) remember(signing string, h *header) {
	seg, _, _ := strings.Cut(signing, ".")
	if len(seg) > headerCacheMaxSeg || c.get(seg) != nil {
		return
	}
	c.put(seg, h)
}

func (c *headerCache) put(seg string, h *header) {
	if len(seg) > headerCacheMaxSeg {
		return
	}
	seg = strings.Clone(seg) // seg is a slice of the caller's token: do not pin it
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*header, headerCacheEntries)
	}
	if len(c.m) >= headerCacheEntries {
		for k := range c.m { // map order is random: a random eviction
			delete(c.m, k)
			break
		}
	}
	c.m[seg] = h
}

// decodeConfirmation decodes a cnf claim: a JSON object without duplicate
// member names (json.Unmarshal would keep the last jkt, where a first-wins
// parser downstream reads the first) whose jkt and x5t#S256 members, when
// present, are non-empty strings.
func decodeConfirmation(raw string) (*Confirmation, error) {
	if it, err := newMembers(raw); err == nil {
		var seen names
		for {
			mb, ok, err := it.next()
			if err != nil || !ok {
				break
			}
			if !seen.add(mb.name) {
				return nil, errors.New("duplicate member " + quote(mb.name))
			}
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return nil, errors.New("not a JSON object")
	}
	c := &Confirmation{}
	for name, v := range m {
		var dst *string
		switch name {
		case "jkt":
			dst = &c.JKT
		case "x5t#S256":
			dst = &c.X5tS256
		default:
			c.Other = append(c.Other, name)
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil || *dst == "" {
			return nil, errors.New(name + " is not a non-empty string")
		}
	}
	slices.Sort(c.Other)
	return c, nil
}
