package verify

import (
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds the nesting of objects and arrays in a header or claims
// set; the top-level object is depth 1.
const maxDepth = 64

// errJSON is the detail of every malformed-JSON verdict. It never carries
// token bytes.
var (
	errJSON      = errors.New("invalid JSON")
	errJSONDepth = errors.New("JSON nested deeper than 64")
	errNotObject = errors.New("not a JSON object")
	errDupMember = errors.New("duplicate member name")
)

// The JSON scanner below is a strict RFC 8259 validator that also walks the
// members of the top-level object. It exists because the verifier needs, in
// one pass and without allocating: validation (JSON, UTF-8, depth), the
// spans of the registered claims (so the claims set can be passed through
// byte for byte), and duplicate detection. encoding/json offers none of these
// cheaply (json.Valid alone costs more than the rest of the parse). It is
// checked against json.Valid + utf8.Valid by a differential fuzz test.

// members iterates the members of a JSON text that must be exactly one
// object. Each call to next validates one member; the whole text is valid
// once next has returned ok=false with a nil error.
type members struct {
	s     string
	i     int
	first bool
}

// newMembers starts iterating s, which must hold one JSON object.
func newMembers(s string) (members, error) {
	m := members{s: s, first: true}
	m.ws()
	if m.i >= len(s) || s[m.i] != '{' {
		return m, errNotObject
	}
	m.i++
	return m, nil
}

// member is one member of an object: its name (unescaped) and the span of
// its value in the scanned text.
type member struct {
	name       string
	start, end int
}

// next returns the next member. ok is false at the end of the object; then
// the rest of the text has been checked to be white space.
func (m *members) next() (mb member, ok bool, err error) {
	m.ws()
	if m.i >= len(m.s) {
		return mb, false, errJSON
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
			return mb, false, errJSON
		}
	}
	if m.i >= len(m.s) || m.s[m.i] != '"' {
		return mb, false, errJSON
	}
	ks := m.i
	esc, err := m.str()
	if err != nil {
		return mb, false, err
	}
	mb.name = m.s[ks+1 : m.i-1]
	if esc {
		mb.name = unescape(mb.name)
	}
	m.ws()
	if m.i >= len(m.s) || m.s[m.i] != ':' {
		return mb, false, errJSON
	}
	m.i++
	m.ws()
	mb.start = m.i
	if err := m.value(2); err != nil {
		return mb, false, err
	}
	mb.end = m.i
	return mb, true, nil
}

// end consumes the closing brace and checks that only white space follows.
func (m *members) end() error {
	m.i++
	m.ws()
	if m.i != len(m.s) {
		return errJSON
	}
	return nil
}

func (m *members) ws() {
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
func (m *members) value(depth int) error {
	if m.i >= len(m.s) {
		return errJSON
	}
	switch c := m.s[m.i]; {
	case c == '"':
		_, err := m.str()
		return err
	case c == '{':
		if depth > maxDepth {
			return errJSONDepth
		}
		m.i++
		m.ws()
		if m.i < len(m.s) && m.s[m.i] == '}' {
			m.i++
			return nil
		}
		for {
			m.ws()
			if m.i >= len(m.s) || m.s[m.i] != '"' {
				return errJSON
			}
			if _, err := m.str(); err != nil {
				return err
			}
			m.ws()
			if m.i >= len(m.s) || m.s[m.i] != ':' {
				return errJSON
			}
			m.i++
			m.ws()
			if err := m.value(depth + 1); err != nil {
				return err
			}
			m.ws()
			if m.i >= len(m.s) {
				return errJSON
			}
			switch m.s[m.i] {
			case ',':
				m.i++
			case '}':
				m.i++
				return nil
			default:
				return errJSON
			}
		}
	case c == '[':
		if depth > maxDepth {
			return errJSONDepth
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
				return errJSON
			}
			switch m.s[m.i] {
			case ',':
				m.i++
			case ']':
				m.i++
				return nil
			default:
				return errJSON
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
	return errJSON
}

func (m *members) lit(l string) error {
	if !strings.HasPrefix(m.s[m.i:], l) {
		return errJSON
	}
	m.i += len(l)
	return nil
}

// num validates a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (m *members) num() error {
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
		return errJSON
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return errJSON
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
			return errJSON
		}
	}
	m.i = i
	return nil
}

// str validates a string starting at the opening quote and leaves m.i after
// the closing quote. It reports whether the string holds escapes. Strings
// must be valid UTF-8 and hold no raw control characters.
func (m *members) str() (esc bool, err error) {
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
				return esc, errJSON
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+4 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) {
					return esc, errJSON
				}
				i += 5
			default:
				return esc, errJSON
			}
		case c < 0x20:
			return esc, errJSON
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return esc, errJSON
			}
			i += size
		}
	}
	return esc, errJSON
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

// unescape decodes the contents of a JSON string that str has validated.
// Lone surrogates become U+FFFD, as encoding/json does.
func unescape(s string) string {
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

// hex4 reads four hex digits that str has validated.
func hex4(s string) rune {
	return hexVal(s[0])<<12 | hexVal(s[1])<<8 | hexVal(s[2])<<4 | hexVal(s[3])
}
