package celexpr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// This file holds the variables claims and request as CEL maps that read
// what an expression selects, when it selects it, instead of decoding the
// whole claims set into a Go map per evaluation (23–29 µs of a 3-comparison
// expression went there). A key lookup (claims.x, claims["x"], has(), in)
// reads one claim through verify.Result.Claim — from the verifier's index
// on a token-cache hit, the claims the expression names being indexed —
// and converts only that value. Every whole-map operation (size, iteration,
// equality, conversion) uses the full decoding, made once per evaluation:
// both are the same map, as cel-go would build it from
// json.Unmarshal's map[string]any.

// claimsMap is the claims variable over a verified Result. It lives for
// one evaluation (one goroutine); it never modifies the Result.
type claimsMap struct {
	res   *verify.Result
	names []string      // the claims the program names (program.claims), read together
	vals  []string      // their JSON values, once loaded ("" absent)
	buf   [8]string     // vals' storage for up to 8 names
	full  traits.Mapper // the decoded claims set, made on first need
	err   error         // why the claims set did not decode (full is then empty)
	// conv and converts hold the converted claims read so far — conv
	// those of names, by index (convBuf its storage for up to 8),
	// converts any other: converting one decodes its JSON (a list or an
	// object; a string's escapes; a number's digits, read exactly from
	// 2^53 on), and an expression may read it once per iteration of a
	// loop over another claim (each read one unit of CEL cost), so that
	// without them the work grew with the product of two claims' sizes.
	// Each claim is converted at most once per evaluation.
	conv     []ref.Val
	convBuf  [8]ref.Val
	converts map[string]ref.Val
	// others holds the JSON text of every claim by name, made on the
	// second read of a claim the program does not name (a key computed
	// at run time: claims[k] in claims.exists(k, ...), g in claims for
	// each g of a list). Each such read costs one unit of CEL cost, and
	// reading it with a scan of the claims set made the work grow with
	// the product of the reads and the token's size (1000 reads of a
	// 16 KiB token: 40 ms and 24 MB per evaluation).
	others     map[string]string
	otherReads int
}

// other returns the JSON text of the claim name, which the program does
// not name: the first such read scans the claims set, any further one
// reads the index of every claim made then.
func (m *claimsMap) other(name string) (string, bool) {
	if m.others == nil {
		if m.otherReads == 0 {
			m.otherReads++
			return m.res.Claim(name)
		}
		m.others = indexClaims(m.res.Claims)
	}
	v, ok := m.others[name]
	return v, ok
}

// indexClaims returns the JSON text of each member of the claims set raw
// by its (unescaped) name, the first of a name given twice, as
// verify.Result.ClaimValues finds it; empty when raw does not scan (it
// then finds nothing either).
func indexClaims(raw []byte) map[string]string {
	s := string(raw)
	out := make(map[string]string)
	mem, err := jsonscan.NewMembers(s)
	if err != nil {
		return out
	}
	for {
		mb, ok, err := mem.Next()
		if err != nil {
			return map[string]string{}
		}
		if !ok {
			return out
		}
		if _, dup := out[mb.Name]; !dup {
			out[mb.Name] = s[mb.Start:mb.End]
		}
	}
}

// converted returns the converted value of the claim name, whose JSON is
// v, converting it on its first read.
func (m *claimsMap) converted(name, v string) ref.Val {
	if i := slices.Index(m.names, name); i >= 0 {
		if m.conv == nil {
			if len(m.names) <= len(m.convBuf) {
				m.conv = m.convBuf[:len(m.names)]
			} else {
				m.conv = make([]ref.Val, len(m.names))
			}
		}
		if m.conv[i] == nil {
			m.conv[i] = jsonValue(v)
		}
		return m.conv[i]
	}
	if cv, ok := m.converts[name]; ok {
		return cv
	}
	cv := jsonValue(v)
	if m.converts == nil {
		m.converts = make(map[string]ref.Val)
	}
	m.converts[name] = cv
	return cv
}

// claim returns the JSON text of the claim name: the claims the program
// names are read together on the first lookup (one pass over a claims set
// the verifier did not index), any other by itself.
func (m *claimsMap) claim(name string) (string, bool) {
	i := slices.Index(m.names, name)
	if i < 0 {
		return m.other(name)
	}
	if m.vals == nil {
		if len(m.names) <= len(m.buf) {
			m.vals = m.buf[:len(m.names)]
		} else {
			m.vals = make([]string, len(m.names))
		}
		m.res.ClaimValues(m.names, m.vals)
	}
	return m.vals[i], m.vals[i] != ""
}

var (
	_ traits.Mapper = (*claimsMap)(nil)
	_ traits.Mapper = (*requestMap)(nil)
)

// decoded returns the whole claims set as cel-go's map of the decoded JSON.
func (m *claimsMap) decoded() traits.Mapper {
	if m.full == nil {
		var claims map[string]any
		claims, m.err = decodeObject(m.res.Claims)
		m.full = types.DefaultTypeAdapter.NativeToValue(claims).(traits.Mapper)
	}
	return m.full
}

// Find implements traits.Mapper.
func (m *claimsMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return m.decoded().Find(key) // its error for a key of another type
	}
	v, ok := m.claim(string(k))
	if !ok {
		return nil, false
	}
	return m.converted(string(k), v), true
}

// Get implements traits.Indexer.
func (m *claimsMap) Get(key ref.Val) ref.Val {
	if v, ok := m.Find(key); ok {
		return v
	}
	return m.decoded().Get(key) // cel-go's error for a missing key
}

// Contains implements traits.Container.
func (m *claimsMap) Contains(key ref.Val) ref.Val {
	if k, ok := key.(types.String); ok {
		_, found := m.claim(string(k))
		return types.Bool(found)
	}
	return m.decoded().Contains(key)
}

// Iterator implements traits.Iterable.
func (m *claimsMap) Iterator() traits.Iterator { return m.decoded().Iterator() }

// Size implements traits.Sizer.
func (m *claimsMap) Size() ref.Val { return m.decoded().Size() }

// ConvertToNative implements ref.Val.
func (m *claimsMap) ConvertToNative(t reflect.Type) (any, error) {
	return m.decoded().ConvertToNative(t)
}

// ConvertToType implements ref.Val.
func (m *claimsMap) ConvertToType(t ref.Type) ref.Val { return m.decoded().ConvertToType(t) }

// Equal implements ref.Val.
func (m *claimsMap) Equal(other ref.Val) ref.Val { return m.decoded().Equal(other) }

// Type implements ref.Val.
func (m *claimsMap) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (m *claimsMap) Value() any { return m.decoded().Value() }

// jsonValue converts the JSON text of one verified claim value to the CEL
// value cel-go makes of its json.Unmarshal decoding: a string, a double
// (every JSON number), a bool, null, or a list or map of those. A value
// that does not decode (a number beyond float64) is an error value: the
// evaluation fails, and the policy denies.
func jsonValue(v string) ref.Val {
	switch c := v[0]; {
	case c == '"':
		if s, ok := verify.JSONString(v); ok {
			return types.String(s)
		}
	case c == 't' && v == "true":
		return types.True
	case c == 'f' && v == "false":
		return types.False
	case c == 'n' && v == "null":
		return types.NullValue
	case c == '-' || ('0' <= c && c <= '9'):
		if f, ok := exactDouble(v); ok {
			return types.Double(f)
		}
		if len(v) > jsonscan.MaxFloatLiteral {
			return types.NewErr("claim number of %d characters is too long to be read as a double (at most %d)", len(v), jsonscan.MaxFloatLiteral)
		}
		return types.NewErr("claim number is beyond what a double holds exactly (an integer beyond 2^53: compare it with a claims matcher)")
	case c == '[' || c == '{':
		x, err := decodeExact([]byte(v))
		if err == nil {
			return types.DefaultTypeAdapter.NativeToValue(x)
		}
		if errors.Is(err, errInexact) {
			return types.NewErr("claim holds a number beyond what a double holds exactly (an integer beyond 2^53)")
		}
	}
	return types.NewErr("claim value does not decode as JSON")
}

// twoTo53 is the magnitude from which a double no longer holds every
// integer.
const twoTo53 = 1 << 53

// exactDouble reads the JSON number literal lit as a double, and reports
// false when it is beyond a double's range or when the double is not the
// literal's value from 2^53 on, where a double no longer holds every
// integer: 123456789012345677 would read as 123456789012345680, which
// 123456789012345678 reads as too, so that an expression allowing one
// numeric id allowed another. Below 2^53 every integer is exact (a
// fraction such as 0.1 is the nearest double, as always in CEL).
//
// A literal longer than jsonscan.MaxFloatLiteral is refused whatever its
// value: strconv.ParseFloat may misread it ("1" + 2000 zeros + "e-1997", that
// is 1000, read as a number near 0, so that claims.risk < 50 allowed it),
// and math/big's decimal scan is quadratic in the digits (a token holder's
// number of the token's size cost seconds per evaluation). No double needs
// this many characters (at most 309 integer digits); such a literal is no
// id, and an error denies.
func exactDouble(lit string) (float64, bool) {
	if len(lit) > jsonscan.MaxFloatLiteral {
		return 0, false
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return 0, false
	}
	if math.Abs(f) < twoTo53 {
		return f, true
	}
	// 2048 bits hold every integer a double can be (up to 2^1024)
	// exactly; a literal that rounds to f at this precision is not an
	// integer.
	b, _, err := big.ParseFloat(lit, 10, 2048, big.ToNearestEven)
	if err != nil || b.Cmp(new(big.Float).SetFloat64(f)) != 0 {
		return 0, false
	}
	return f, true
}

// errInexact is the decoding error of a number exactDouble refuses.
var errInexact = errors.New("a number a double does not hold exactly")

// decodeExact decodes a verified JSON value as json.Unmarshal into an any
// does (numbers as float64), but refuses a number exactDouble refuses.
func decodeExact(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	return exactNumbers(x)
}

// exactNumbers replaces each json.Number of v by its float64, or fails.
func exactNumbers(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			x, err := exactNumbers(e)
			if err != nil {
				return nil, err
			}
			v[k] = x
		}
	case []any:
		for i, e := range v {
			x, err := exactNumbers(e)
			if err != nil {
				return nil, err
			}
			v[i] = x
		}
	case json.Number:
		f, ok := exactDouble(string(v))
		if !ok {
			return nil, fmt.Errorf("%w: %s", errInexact, v)
		}
		return f, nil
	}
	return v, nil
}

// requestMap is the request variable {method, host, path} over the
// original request, for one evaluation.
type requestMap struct {
	o    request.Original
	full traits.Mapper
}

func (m *requestMap) decoded() traits.Mapper {
	if m.full == nil {
		m.full = types.DefaultTypeAdapter.NativeToValue(map[string]string{
			"method": m.o.Method, "host": m.o.Host, "path": m.o.Path,
		}).(traits.Mapper)
	}
	return m.full
}

// field returns the member named key.
func (m *requestMap) field(key ref.Val) (ref.Val, bool) {
	switch key {
	case types.String("method"):
		return types.String(m.o.Method), true
	case types.String("host"):
		return types.String(m.o.Host), true
	case types.String("path"):
		return types.String(m.o.Path), true
	}
	return nil, false
}

// Find implements traits.Mapper.
func (m *requestMap) Find(key ref.Val) (ref.Val, bool) {
	if v, ok := m.field(key); ok {
		return v, true
	}
	return m.decoded().Find(key)
}

// Get implements traits.Indexer.
func (m *requestMap) Get(key ref.Val) ref.Val {
	if v, ok := m.field(key); ok {
		return v
	}
	return m.decoded().Get(key)
}

// Contains implements traits.Container.
func (m *requestMap) Contains(key ref.Val) ref.Val {
	if _, ok := m.field(key); ok {
		return types.True
	}
	return m.decoded().Contains(key)
}

// Iterator implements traits.Iterable.
func (m *requestMap) Iterator() traits.Iterator { return m.decoded().Iterator() }

// Size implements traits.Sizer.
func (m *requestMap) Size() ref.Val { return types.Int(3) }

// ConvertToNative implements ref.Val.
func (m *requestMap) ConvertToNative(t reflect.Type) (any, error) {
	return m.decoded().ConvertToNative(t)
}

// ConvertToType implements ref.Val.
func (m *requestMap) ConvertToType(t ref.Type) ref.Val { return m.decoded().ConvertToType(t) }

// Equal implements ref.Val.
func (m *requestMap) Equal(other ref.Val) ref.Val { return m.decoded().Equal(other) }

// Type implements ref.Val.
func (m *requestMap) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (m *requestMap) Value() any { return m.decoded().Value() }
