// Package jsonscan is the project's strict JSON scanner: an RFC 8259
// validator (UTF-8, no raw controls, nesting at most [MaxDepth]) that walks
// the members of one top-level object in a single pass without allocating,
// giving each member's name and the span of its value. Package verify reads
// JWT headers and claims with it, package dpop DPoP proofs: the same bytes
// are accepted or refused the same way wherever a JOSE object is read.
package jsonscan

import (
	"errors"
	"iter"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of objects and arrays in a scanned text; the
// top-level object is depth 1.
const MaxDepth = 64

// MaxFloatLiteral is the longest JSON number literal that
// strconv.ParseFloat (and so encoding/json into a float64) always reads as
// its nearest double: it keeps at most 800 digits, and a longer literal
// may be misread, not rounded (digits before the point past the 800th are
// not counted in its position: "1" followed by 2000 zeros and "e-1997" is
// 1000, and reads as a number near 0). A reader of a number into a double
// refuses, or passes on as text, a longer literal; no number a double
// holds needs one (internal/numericdate reads dates of any length exactly).
const MaxFloatLiteral = 800

// The scanner's verdicts. They never carry the scanned bytes.
var (
	// ErrJSON is every malformed-JSON verdict but the two below.
	ErrJSON = errors.New("invalid JSON")
	// ErrDepth is a text nested deeper than MaxDepth.
	ErrDepth = errors.New("JSON nested deeper than 64")
	// ErrNotObject is a text that does not start with an object.
	ErrNotObject = errors.New("not a JSON object")
	// ErrDupMember is a member name seen twice in one object, in any
	// spelling (escaped, or in another case: see Names). The scanner
	// detects it in the objects nested in a member's value; in the
	// top-level object its callers do, on the names it returns.
	ErrDupMember = errors.New("duplicate member name")
)

// The JSON scanner below is a strict RFC 8259 validator that also walks the
// members of the top-level object. It exists because the verifier needs, in
// one pass and without allocating: validation (JSON, UTF-8, depth), the
// spans of the registered claims (so the claims set can be passed through
// byte for byte), and duplicate detection. encoding/json offers none of these
// cheaply (json.Valid alone costs more than the rest of the parse). It is
// checked against json.Valid + utf8.Valid by a differential fuzz test.

// Members iterates the members of a JSON text that must be exactly one
// object. Each call to Next validates one member; the whole text is valid
// once Next has returned ok=false with a nil error. A Members is used by one
// goroutine.
type Members struct {
	s     string
	i     int
	first bool
}

// NewMembers starts iterating s, which must hold one JSON object.
func NewMembers(s string) (Members, error) {
	m := Members{s: s, first: true}
	m.ws()
	if m.i >= len(s) || s[m.i] != '{' {
		return m, ErrNotObject
	}
	m.i++
	return m, nil
}

// Member is one member of an object: its Name (unescaped) and the span
// [Start, End) of its value in the scanned text.
type Member struct {
	Name       string
	Start, End int
}

// Next returns the next member. ok is false at the end of the object; then
// the rest of the text has been checked to be white space.
func (m *Members) Next() (mb Member, ok bool, err error) {
	m.ws()
	if m.i >= len(m.s) {
		return mb, false, ErrJSON
	}
	if m.first {
		if m.s[m.i] == '}' {
			return mb, false, m.end()
		}
		m.first = false
	} else {
		switch m.s[m.i] {
		case '}':
			return mb, false, m.end()
		case ',':
			m.i++
			m.ws()
		default:
			return mb, false, ErrJSON
		}
	}
	if m.i >= len(m.s) || m.s[m.i] != '"' {
		return mb, false, ErrJSON
	}
	ks := m.i
	esc, err := m.str()
	if err != nil {
		return mb, false, err
	}
	mb.Name = m.s[ks+1 : m.i-1]
	if esc {
		mb.Name = Unescape(mb.Name)
	}
	m.ws()
	if m.i >= len(m.s) || m.s[m.i] != ':' {
		return mb, false, ErrJSON
	}
	m.i++
	m.ws()
	mb.Start = m.i
	if err := m.value(2); err != nil {
		return mb, false, err
	}
	mb.End = m.i
	return mb, true, nil
}

// end consumes the closing brace and checks that only white space follows.
func (m *Members) end() error {
	m.i++
	m.ws()
	if m.i != len(m.s) {
		return ErrJSON
	}
	return nil
}

func (m *Members) ws() {
	for m.i < len(m.s) {
		switch m.s[m.i] {
		case ' ', '\t', '\n', '\r':
			m.i++
		default:
			return
		}
	}
}

// value validates one JSON value at depth (the top-level object is 1).
func (m *Members) value(depth int) error {
	if m.i >= len(m.s) {
		return ErrJSON
	}
	switch c := m.s[m.i]; {
	case c == '"':
		_, err := m.str()
		return err
	case c == '{':
		if depth > MaxDepth {
			return ErrDepth
		}
		m.i++
		m.ws()
		if m.i < len(m.s) && m.s[m.i] == '}' {
			m.i++
			return nil
		}
		// A name twice in a nested object is refused as at the top level:
		// parsers keep the first (gjson, many JSON pointer readers) or the
		// last (encoding/json, CEL's claims), so a policy and the
		// application reading the forwarded token could disagree on
		// realm_access.roles.
		var names Names
		for {
			m.ws()
			if m.i >= len(m.s) || m.s[m.i] != '"' {
				return ErrJSON
			}
			ks := m.i
			esc, err := m.str()
			if err != nil {
				return err
			}
			name := m.s[ks+1 : m.i-1]
			if esc {
				name = Unescape(name)
			}
			if !names.Add(name) {
				return ErrDupMember
			}
			m.ws()
			if m.i >= len(m.s) || m.s[m.i] != ':' {
				return ErrJSON
			}
			m.i++
			m.ws()
			if err := m.value(depth + 1); err != nil {
				return err
			}
			m.ws()
			if m.i >= len(m.s) {
				return ErrJSON
			}
			switch m.s[m.i] {
			case ',':
				m.i++
			case '}':
				m.i++
				return nil
			default:
				return ErrJSON
			}
		}
	case c == '[':
		if depth > MaxDepth {
			return ErrDepth
		}
		m.i++
		m.ws()
		if m.i < len(m.s) && m.s[m.i] == ']' {
			m.i++
			return nil
		}
		for {
			m.ws()
			if err := m.value(depth + 1); err != nil {
				return err
			}
			m.ws()
			if m.i >= len(m.s) {
				return ErrJSON
			}
			switch m.s[m.i] {
			case ',':
				m.i++
			case ']':
				m.i++
				return nil
			default:
				return ErrJSON
			}
		}
	case c == 't':
		return m.lit("true")
	case c == 'f':
		return m.lit("false")
	case c == 'n':
		return m.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return m.num()
	}
	return ErrJSON
}

func (m *Members) lit(l string) error {
	if !strings.HasPrefix(m.s[m.i:], l) {
		return ErrJSON
	}
	m.i += len(l)
	return nil
}

// num validates a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (m *Members) num() error {
	s := m.s
	i := m.i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return ErrJSON
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return ErrJSON
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return ErrJSON
		}
	}
	m.i = i
	return nil
}

// str validates a string starting at the opening quote and leaves m.i after
// the closing quote. It reports whether the string holds escapes. Strings
// must be valid UTF-8 and hold no raw control characters.
func (m *Members) str() (esc bool, err error) {
	s := m.s
	i := m.i + 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			m.i = i + 1
			return esc, nil
		case c == '\\':
			esc = true
			i++
			if i >= len(s) {
				return esc, ErrJSON
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+4 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) {
					return esc, ErrJSON
				}
				i += 5
			default:
				return esc, ErrJSON
			}
		case c < 0x20:
			return esc, ErrJSON
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return esc, ErrJSON
			}
			i += size
		}
	}
	return esc, ErrJSON
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	default:
		return rune(c - 'A' + 10)
	}
}

// Unescape decodes the contents (between the quotes) of a JSON string that
// the scanner has validated. Lone surrogates become U+FFFD, as encoding/json
// does. It allocates only when s holds an escape.
func Unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			b = append(b, c)
			i++
			continue
		}
		i++
		switch s[i] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(s[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				// A valid pair is two escapes; anything else is one U+FFFD
				// (the next escape, if any, is decoded on its own).
				r2 := utf8.RuneError
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					r2 = utf16.DecodeRune(r, hex4(s[i+3:]))
				}
				if r2 != utf8.RuneError {
					i += 6
				}
				r = r2
			}
			b = utf8.AppendRune(b, r)
		default: // '"', '\\', '/'
			b = append(b, s[i])
		}
		i++
	}
	return string(b)
}

// LoneSurrogate reports whether the valid JSON text v holds a \u escape
// of a UTF-16 surrogate that is not half of a pair (a high one followed by
// an escaped low one): encoding/json and Unescape decode it to U+FFFD, as
// they do \ufffd itself, while Python's and JavaScript's JSON keep it. A
// '\' is only ever inside a string, so v may be a whole document.
func LoneSurrogate(v string) bool {
	for i := 0; i+1 < len(v); i++ {
		if v[i] != '\\' {
			continue
		}
		i++ // the escaped byte: '\\' here starts no escape
		if v[i] != 'u' || i+4 >= len(v) {
			continue
		}
		r := hex4(v[i+1:])
		i += 4
		switch {
		case r < 0xd800 || r > 0xdfff:
		case r <= 0xdbff && i+6 < len(v) && v[i+1] == '\\' && v[i+2] == 'u':
			if r2 := hex4(v[i+3:]); r2 < 0xdc00 || r2 > 0xdfff {
				return true
			}
			i += 6
		default:
			return true
		}
	}
	return false
}

// Hex4 reads the four hex digits of a \u escape the scanner has validated.
func Hex4(s string) rune { return hex4(s) }

// hex4 reads four hex digits that str has validated.
func hex4(s string) rune {
	return hexVal(s[0])<<12 | hexVal(s[1])<<8 | hexVal(s[2])<<4 | hexVal(s[3])
}

// IsString reports whether v is exactly one valid JSON string literal.
func IsString(v string) bool {
	if len(v) < 2 || v[0] != '"' {
		return false
	}
	m := Members{s: v}
	_, err := m.str()
	return err == nil && m.i == len(v)
}

// String returns the unescaped value of v when v is exactly one valid JSON
// string literal, and false for any other value. It allocates only when the
// string holds escapes.
func String(v string) (string, bool) {
	if !IsString(v) {
		return "", false
	}
	return Unescape(v[1 : len(v)-1]), true
}

// Elements yields the JSON text of each element of v when v is a JSON
// array, and nothing for any other value (or invalid JSON: it stops at the
// first element that does not scan). It allocates only for an element
// holding an object with more than 24 members or an escaped member name
// (its duplicate check).
func Elements(v string) iter.Seq[string] {
	return func(yield func(string) bool) {
		if len(v) < 2 || v[0] != '[' {
			return
		}
		m := Members{s: v, i: 1}
		m.ws()
		if m.i < len(v) && v[m.i] == ']' {
			return
		}
		for {
			m.ws()
			start := m.i
			if m.value(2) != nil {
				return
			}
			if !yield(v[start:m.i]) {
				return
			}
			m.ws()
			if m.i >= len(v) || v[m.i] != ',' {
				return
			}
			m.i++
		}
	}
}

// Names records member names to detect duplicates (RFC 7519 §4: a claims
// set with duplicate names is rejected, so that no two parsers can disagree
// on which value counts). Names equal ignoring case count as duplicates:
// encoding/json (and every Go program that decodes claims into a struct,
// golang-jwt's RegisteredClaims among them) matches an object's names to
// its fields ignoring case, the last match winning, so {"groups":[…],
// "Groups":[…]} reads as one value to such a program and as another to a
// reader of the exact name. Small objects need no allocation; large ones
// cost a map, not a quadratic scan. The zero Names is empty.
type Names struct {
	small [24]string
	n     int
	big   map[string]struct{}
}

// Add records name and reports false if it, or a name equal to it
// ignoring case (strings.EqualFold), was already present.
func (d *Names) Add(name string) bool {
	name = foldKey(name)
	if d.big != nil {
		if _, dup := d.big[name]; dup {
			return false
		}
		d.big[name] = struct{}{}
		return true
	}
	for _, s := range d.small[:d.n] {
		if s == name {
			return false
		}
	}
	if d.n < len(d.small) {
		d.small[d.n] = name
		d.n++
		return true
	}
	d.big = make(map[string]struct{}, 2*len(d.small))
	for _, s := range d.small {
		d.big[s] = struct{}{}
	}
	d.big[name] = struct{}{}
	return true
}

// foldKey returns a string that is the same for two names exactly when
// strings.EqualFold holds between them, as encoding/json folds names: name
// itself when it holds no upper-case ASCII letter and no byte beyond ASCII
// (every usual claim name: no allocation), else name with each rune
// replaced by the smallest rune of its simple-folding orbit, an upper-case
// ASCII letter lowered (so that "Sub", "SUB" and "ſub" all give "sub").
func foldKey(name string) string {
	i := 0
	for ; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			break
		}
	}
	if i == len(name) {
		return name
	}
	b := make([]byte, 0, len(name))
	b = append(b, name[:i]...)
	for _, r := range name[i:] {
		f := foldRune(r)
		if 'A' <= f && f <= 'Z' {
			f += 'a' - 'A'
		}
		b = utf8.AppendRune(b, f)
	}
	return string(b)
}

// foldRune returns the smallest rune of r's simple-folding orbit
// (encoding/json's foldRune).
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
