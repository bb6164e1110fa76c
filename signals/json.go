package signals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/internal/numericdate"
)

// object is a JSON object's members by exact name (encoding/json matches
// struct fields case-insensitively: "Events" must not stand for "events").
type object map[string]json.RawMessage

// maxDepth bounds the nesting of a token's claims.
const maxDepth = 32

var errDuplicate = errors.New("duplicate member name")

// parseObject decodes data, a JSON object, refusing duplicate member names
// at any depth (two parsers must not read two values for one name),
// nesting deeper than maxDepth and data that is not UTF-8 (encoding/json
// reads each such byte as U+FFFD: a poll response's jti "\x97" would be
// acknowledged as "\uFFFD"). A \u escape of a lone surrogate, which it
// decodes to U+FFFD too, is the caller's to refuse where the string goes
// back to its sender (ParsePollResponse): in a signed token's claims the
// verifier decodes it the same way, and a reason text a transmitter cut
// in the middle of an emoji must not cost the revocation.
func parseObject(data []byte) (object, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := checkValue(dec, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	var o object
	if err := json.Unmarshal(data, &o); err != nil || o == nil {
		return nil, errors.New("not a JSON object")
	}
	return o, nil
}

// checkValue reads one JSON value from dec, refusing duplicate member
// names and nesting beyond maxDepth.
func checkValue(dec *json.Decoder, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nested deeper than %d", maxDepth)
	}
	t, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := t.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := k.(string)
			if seen[name] {
				return fmt.Errorf("%w %q", errDuplicate, name)
			}
			seen[name] = true
			if err := checkValue(dec, depth+1); err != nil {
				return err
			}
		}
	case '[':
		for dec.More() {
			if err := checkValue(dec, depth+1); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// member decodes o's member name into an object; ok is false when it is
// absent, and err set when it is not an object.
func (o object) object(name string) (_ object, ok bool, err error) {
	raw, ok := o[name]
	if !ok {
		return nil, false, nil
	}
	var m object
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, true, fmt.Errorf("%s is not a JSON object", name)
	}
	return m, true, nil
}

// str decodes o's member name as a string; ok is false when it is absent,
// and err set when it is not a string.
func (o object) str(name string) (_ string, ok bool, err error) {
	raw, ok := o[name]
	if !ok {
		return "", false, nil
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", true, fmt.Errorf("%s is not a string", name)
	}
	return s, true, nil
}

// date decodes o's member name as a NumericDate (RFC 7519 §2: seconds
// since the epoch, possibly fractional), read exactly whatever its
// spelling (internal/numericdate); ok is false when it is absent. A
// negative number (-1e-400 too) or one past year 9999 is out of range.
func (o object) date(name string) (_ time.Time, ok bool, err error) {
	raw, ok := o[name]
	if !ok {
		return time.Time{}, false, nil
	}
	d, isNumber := numericdate.Read(string(raw))
	switch {
	case !isNumber:
		return time.Time{}, true, fmt.Errorf("%s is not a number", name)
	case d.Neg || d.Beyond(253402300799):
		return time.Time{}, true, fmt.Errorf("%s is out of range", name)
	}
	return d.Time(), true, nil
}
