package jsonscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanAll validates s with the members iterator, returning the names.
func scanAll(s string) ([]string, error) {
	it, err := NewMembers(s)
	if err != nil {
		return nil, err
	}
	var out []string
	for {
		mb, ok, err := it.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, mb.Name)
	}
}

// depth returns the nesting depth of valid JSON s.
func depth(s string) int {
	d, maxD, inStr := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '{' || c == '['):
			d++
			maxD = max(maxD, d)
		case !inStr && (c == '}' || c == ']'):
			d--
		}
	}
	return maxD
}

// reference says whether s is what the scanner must accept: one JSON object
// (encoding/json), valid UTF-8, depth ≤ 64, no name twice in an object
// nested in it (the top-level object's names are its callers' to check).
func reference(s string) bool {
	if !json.Valid([]byte(s)) || !utf8.ValidString(s) || depth(s) > MaxDepth {
		return false
	}
	t := strings.TrimLeft(s, " \t\r\n")
	return strings.HasPrefix(t, "{") && !nestedDuplicate(s)
}

// nestedDuplicate reports whether an object below the top level of the
// valid JSON text s has a member name twice, by encoding/json's tokens,
// names compared as encoding/json matches them to a struct's fields
// (strings.EqualFold).
func nestedDuplicate(s string) bool {
	dec := json.NewDecoder(strings.NewReader(s))
	type frame struct {
		names  *[]string // nil for an array
		expect bool      // an object's next string token is a name
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if len(stack) > 0 && stack[len(stack)-1].names != nil && stack[len(stack)-1].expect {
			top := &stack[len(stack)-1]
			if name, ok := tok.(string); ok {
				if len(stack) > 1 && slices.ContainsFunc(*top.names, func(n string) bool { return strings.EqualFold(n, name) }) {
					return true
				}
				*top.names, top.expect = append(*top.names, name), false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if len(stack) > 0 {
				stack[len(stack)-1].expect = stack[len(stack)-1].names != nil
			}
			stack = append(stack, frame{names: new([]string), expect: true})
			continue
		case json.Delim('['):
			if len(stack) > 0 {
				stack[len(stack)-1].expect = stack[len(stack)-1].names != nil
			}
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].names != nil {
			stack[len(stack)-1].expect = true
		}
	}
}

var scannerCases = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`, `{"a"}`, `{"a":}`, `{"a":1}x`, `{"a":1}}`,
	`{"a":[1,2,{"b":null}],"c":true,"d":false,"e":"x\"y"}`, `[]`, `"x"`, `1`, ``, `{`, `{"a":1`,
	`{"a":-0}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+5}`, `{"a":-}`, `{"a":1.5E-3}`,
	`{"a":tru}`, `{"a":nul}`, `{"a":"\u00e9"}`, `{"a":"\u00zz"}`, `{"a":"\x"}`, "{\"a\":\"\t\"}",
	"{\"a\":\"\xff\"}", "{\"a\":\"\xed\xa0\x80\"}", `{"a":[1,]}`, `{"a":[,1]}`, `{"a":{"b":1,}}`,
	`{"` + "\u2028" + `":1}`, `{"a":"\ud800"}`, `{"a":1}` + "\n",
	`{"a":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`,
	`{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
	`{"a":{"b":1,"b":2}}`, `{"a":{"b":1,"\u0062":2}}`, `{"a":[{"b":1},{"b":2}]}`, `{"a":{"b":{"b":1}}}`,
	`{"a":[{"x":1,"y":{"z":1,"z":2}}]}`, `{"a":{"b":1},"c":{"b":1}}`, `{"a":1,"a":2}`,
	`{"a":{` + strings.Repeat(`"k":1,`, 30) + `"k":1}}`,
	`{"a":{"b":1,"B":2}}`, `{"a":{"sub":1,"ſub":2}}`, `{"a":{"k":1,"\u212a":2}}`, `{"a":{"b":1,"bb":2}}`,
	// One broken rule each, where the grammar has a check of its own: a
	// missing ',' or ':' or opening '"' at the top level, in a nested object
	// and in an array; a truncated literal followed by more input; \r as
	// white space; every escape; a truncated or non-hex \u; a string ending
	// in '\' at the end of input; the last control byte; upper-case hex.
	`{"a":1""b":2}`, `{x":1}`, `{"a":1,x":2}`, `{"a";1}`, `{"a":{"b":1""c":2}}`, `{"a":{x":1}}`,
	`{"a":{"b";1}}`, `{"a":[1"2]}`, `{"a":[nul1,tru2,fals3]}`, "{\r\"a\"\r:\r1\r}\r", `{"a":{}}`,
	`{"a":"\"\\\/\b\f\n\r\t"}`, `{"a":"\u004g"}`, `{"a":"\u123`, `{"a":"\`, "{\"a\":\"\x1f\"}",
	`{"a":"\u00FF\u00ff"}`, `{"\u0061b":1}`,
	// Objects nested to depth 64 and 65 (the depth bound of '{', apart from '[').
	strings.Repeat(`{"a":`, 63) + `{}` + strings.Repeat(`}`, 63),
	strings.Repeat(`{"a":`, 64) + `{}` + strings.Repeat(`}`, 64),
}

func TestScannerMatchesEncodingJSON(t *testing.T) {
	for _, s := range scannerCases {
		_, err := scanAll(s)
		if got, want := err == nil, reference(s); got != want {
			t.Errorf("scan(%q) ok = %v (%v), want %v", s, got, err, want)
		}
	}
}

// TestNestedDuplicateNames: a name twice in a nested object, in any
// spelling and at any depth, is ErrDupMember; the same name in two
// objects is not.
func TestNestedDuplicateNames(t *testing.T) {
	var distinct strings.Builder
	var first23 strings.Builder
	for i := range 30 {
		fmt.Fprintf(&distinct, `"k%d":1,`, i)
		if i < 23 {
			fmt.Fprintf(&first23, `"k%d":1,`, i)
		}
	}
	tests := []struct {
		s   string
		dup bool
	}{
		{`{"a":{"b":1,"b":2}}`, true},
		{`{"a":{"b":1,"\u0062":2}}`, true},
		{`{"a":[{"x":1,"y":{"z":1,"z":2}}]}`, true},
		{`{"realm_access":{"roles":["user"],"roles":["admin"]}}`, true},
		{`{"realm_access":{"roles":["user"],"Roles":["admin"]}}`, true},
		{`{"a":{"sub":1,"ſub":2}}`, true},      // U+017F folds to s
		{`{"a":{"kid":1,"\u212aid":2}}`, true}, // the Kelvin sign folds to k
		{`{"a":{"b":1,"bb":2,"é":3,"É":4}}`, true},
		{`{"a":{"b":1,"bb":2,"é":3}}`, false},
		{`{"a":{` + distinct.String() + `"k3":2}}`, true}, // past Names' small array
		{`{"a":{` + distinct.String() + `"k30":2}}`, false},
		// 24 names fill the small array; the 25th, "", was never seen.
		{`{"a":{` + first23.String() + `"x":1,"":2}}`, false},
		{`{"a":[{"b":1},{"b":2}]}`, false},
		{`{"a":{"b":{"b":1}}}`, false},
		{`{"a":{"b":1},"c":{"b":1}}`, false},
	}
	for _, tt := range tests {
		_, err := scanAll(tt.s)
		if got := errors.Is(err, ErrDupMember); got != tt.dup || (!tt.dup && err != nil) {
			t.Errorf("scan(%.60q) = %v, want duplicate %v", tt.s, err, tt.dup)
		}
		if reference(tt.s) == tt.dup {
			t.Errorf("reference(%.60q) = %v, want %v", tt.s, !tt.dup, !tt.dup)
		}
	}
}

func TestUnescapeMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{`abc`, `a\"b\\c\/d\b\f\n\r\t`, `\u00e9\u20AC`, `\ud83d\ude00`, `\ud800`, `\ud800x`,
		`\ud800\u0041`, `\udc00\ud800`, `\ud83d\ud83d\ude00`, `\u0000`} {
		var want string
		if err := json.Unmarshal([]byte(`"`+s+`"`), &want); err != nil {
			t.Fatalf("json.Unmarshal(%q) = %v", s, err)
		}
		if got := Unescape(s); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", s, got, want)
		}
	}
}

// FuzzScanner compares the scanner with encoding/json: it accepts exactly
// what reference accepts; the names it reports are, in order, the
// top-level names encoding/json's tokens decode (each unescaped to the same
// string), each value's span is the raw value encoding/json reads; and
// Names flags a top-level name exactly when encoding/json would match it
// to a field an earlier name matched (foldFields: the field encoding/json
// itself picks for each name, not the fold rule restated).
func FuzzScanner(f *testing.F) {
	for _, s := range scannerCases {
		f.Add(s)
	}
	for _, s := range []string{`{"sub":1,"ſub":2}`, `{"kid":1,"\u212aid":2}`, `{"s":1,"S":2,"ſ":3}`, `{"σ":1,"ς":2,"Σ":3}`,
		`{"ǆ":1,"ǅ":2}`, `{"µ":1,"μ":2}`, `{"ß":1,"ẞ":2}`, `{"Å":1,"å":2,"Å":3}`, `{"i":1,"ı":2,"İ":3}`, `{"é":1,"É":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		it, err := NewMembers(s)
		var got []Member
		for err == nil {
			mb, ok, nerr := it.Next()
			if err = nerr; !ok || err != nil {
				break
			}
			got = append(got, mb)
		}
		if ok, want := err == nil, reference(s); ok != want {
			t.Fatalf("scan(%q) ok = %v (%v), want %v", s, ok, err, want)
		}
		if err != nil {
			return
		}
		want, err := topMembers(s)
		if err != nil {
			t.Fatalf("encoding/json tokens of %q: %v", s, err)
		}
		if len(got) != len(want) {
			t.Fatalf("scan(%q) = %d members, encoding/json %d", s, len(got), len(want))
		}
		var d Names
		field := map[int]string{} // foldFields index -> the first name encoding/json matched to it
		for i, mb := range got {
			if mb.Name != want[i].name {
				t.Fatalf("scan(%q) member %d name = %q, encoding/json %q", s, i, mb.Name, want[i].name)
			}
			if v := s[mb.Start:mb.End]; v != want[i].raw {
				t.Fatalf("scan(%q) member %q value = %q, encoding/json %q", s, mb.Name, v, want[i].raw)
			}
			fresh := d.Add(mb.Name)
			k := jsonField(mb.Name)
			if k < 0 {
				continue
			}
			if first, seen := field[k]; seen && fresh {
				t.Fatalf("Names.Add(%q) after %q = true; encoding/json reads both into field %q", mb.Name, first, foldFields[k])
			}
			if _, seen := field[k]; !seen && !fresh {
				t.Fatalf("Names.Add(%q) = false; encoding/json matched no earlier name to field %q", mb.Name, foldFields[k])
			}
			if _, seen := field[k]; !seen {
				field[k] = mb.Name
			}
		}
	})
}

// member is one top-level member as encoding/json reads it.
type member struct{ name, raw string }

// topMembers returns the top-level members of the JSON object s as
// encoding/json's Decoder reads them: each name token (unescaped by
// encoding/json) and the raw bytes of its value.
func topMembers(s string) ([]member, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object: %v %v", tok, err)
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("name token %v", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, member{name, string(raw)})
	}
	return out, nil
}

// foldFields are the JSON names of foldStruct's fields: names whose
// letters have other members in their simple-folding orbits (s and ſ, k
// and the Kelvin sign, σ and ς, ǅ, µ and μ, ß and ẞ, the Ångström sign) or
// none beyond ASCII case (i, whose dotless and dotted forms are no fold of
// it), so that the fuzzer's names meet encoding/json's matching.
var foldFields = []string{"s", "k", "sub", "kid", "σ", "ǆ", "µ", "ß", "å", "i", "é", "ab"}

// foldStruct has one field per foldFields name, in order.
type foldStruct struct {
	F0  *json.RawMessage `json:"s"`
	F1  *json.RawMessage `json:"k"`
	F2  *json.RawMessage `json:"sub"`
	F3  *json.RawMessage `json:"kid"`
	F4  *json.RawMessage `json:"σ"`
	F5  *json.RawMessage `json:"ǆ"`
	F6  *json.RawMessage `json:"µ"`
	F7  *json.RawMessage `json:"ß"`
	F8  *json.RawMessage `json:"å"`
	F9  *json.RawMessage `json:"i"`
	F10 *json.RawMessage `json:"é"`
	F11 *json.RawMessage `json:"ab"`
}

// jsonField returns the index in foldFields of the field encoding/json
// sets from a member named name, or -1 when it sets none.
func jsonField(name string) int {
	doc, _ := json.Marshal(map[string]int{name: 0})
	var v foldStruct
	if err := json.Unmarshal(doc, &v); err != nil {
		return -1
	}
	for i, p := range []*json.RawMessage{v.F0, v.F1, v.F2, v.F3, v.F4, v.F5, v.F6, v.F7, v.F8, v.F9, v.F10, v.F11} {
		if p != nil {
			return i
		}
	}
	return -1
}

// TestNamesFoldCase: Add refuses a name equal to one recorded ignoring
// case, as strings.EqualFold (and encoding/json's field matching) has it,
// in the small array and in the map alike.
func TestNamesFoldCase(t *testing.T) {
	for _, pre := range []int{0, 30} {
		var d Names
		for i := range pre {
			d.Add(fmt.Sprintf("k%d", i))
		}
		for _, pair := range [][2]string{{"sub", "SUB"}, {"Groups", "gROUPS"}, {"ſx", "SX"}, {"\u212ay", "ky"}, {"éa", "ÉA"}, {"zed", "ZED"}, {"x-1", "X-1"}} {
			if !d.Add(pair[0]) {
				t.Fatalf("pre %d: Add(%q) = false, want true", pre, pair[0])
			}
			if d.Add(pair[1]) {
				t.Errorf("pre %d: Add(%q) after %q = true, want false (equal ignoring case)", pre, pair[1], pair[0])
			}
		}
		for _, n := range []string{"subject", "x", "k", "groupsx"} {
			if !d.Add(n) {
				t.Errorf("pre %d: Add(%q) = false, want true", pre, n)
			}
		}
	}
}

func TestNames(t *testing.T) {
	var d Names
	for i := range 100 {
		if !d.Add(strings.Repeat("x", i)) {
			t.Fatalf("Add(%d) = false, want true", i)
		}
	}
	for _, i := range []int{0, 5, 23, 24, 99} {
		if d.Add(strings.Repeat("x", i)) {
			t.Errorf("Add(%d) again = true, want false", i)
		}
	}
}

// TestStringIsExactlyOneLiteral: String accepts one whole valid string
// literal and nothing else (a claim value read as a string must be one).
func TestStringIsExactlyOneLiteral(t *testing.T) {
	tests := []struct {
		v    string
		want string
		ok   bool
	}{
		{`"a"`, "a", true},
		{`"a\u0062"`, "ab", true},
		{`""`, "", true},
		{`"a"x`, "", false},
		{`"a""b"`, "", false},
		{`"a`, "", false},
		{`"`, "", false},
		{`a"`, "", false},
		{`1`, "", false},
		{`["a"]`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.v, func(t *testing.T) {
			got, ok := String(tt.v)
			if got != tt.want || ok != tt.ok {
				t.Errorf("String(%q) = %q, %v, want %q, %v", tt.v, got, ok, tt.want, tt.ok)
			}
			if IsString(tt.v) != tt.ok {
				t.Errorf("IsString(%q) = %v, want %v", tt.v, !tt.ok, tt.ok)
			}
		})
	}
}

// TestElementsOfArraysOnly: Elements yields the elements of an array and
// nothing for any other value; it stops at the first element that does not
// scan.
func TestElementsOfArraysOnly(t *testing.T) {
	tests := []struct {
		v    string
		want []string
	}{
		{`["a", 1 ,{"b":[2]}]`, []string{`"a"`, `1`, `{"b":[2]}`}},
		{`[]`, nil},
		{`[ ]`, nil},
		{`{"a":1}`, nil},
		{`"a"`, nil},
		{`[1,x,2]`, []string{`1`}},
		{`[1,{"b":1,"b":2},3]`, []string{`1`}},
	}
	for _, tt := range tests {
		t.Run(tt.v, func(t *testing.T) {
			if got := slices.Collect(Elements(tt.v)); !slices.Equal(got, tt.want) {
				t.Errorf("Elements(%q) = %q, want %q", tt.v, got, tt.want)
			}
		})
	}
}

// TestFoldFieldsTags: every foldFields name is the tag encoding/json
// reads (a tag it found invalid would fall back to the Go field's name).
func TestFoldFieldsTags(t *testing.T) {
	for i, n := range foldFields {
		if got := jsonField(n); got != i {
			t.Errorf("jsonField(%q) = %d, want %d", n, got, i)
		}
	}
	if got := jsonField("F0"); got != -1 {
		t.Errorf(`jsonField("F0") = %d, want -1`, got)
	}
}
