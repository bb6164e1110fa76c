package dpop

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/internal/numericdate"
)

// A proof is read with the project's strict JSON scanner (internal/jsonscan,
// the verifier's): one pass over the header and one over the claims, each
// member's value kept as a span of the decoded text, no map and no
// reflection. What the scanner refuses besides what encoding/json refused
// before it (invalid UTF-8, data after the object, nesting deeper than 64)
// is refused as a malformed proof; everything else is read as before
// (FuzzRead holds the reader to the encoding/json one it replaced): a JSON
// null where a string is read is "", a duplicate member name is refused.

// header is what the checks read of a proof's JOSE header: the raw JSON
// text of the members they use, "" when absent.
type header struct {
	typ, alg, jwk string
	crit          bool
}

// parse splits a compact JWS, decodes its three segments into one buffer
// and reads the header and the claims. The returned strings share that
// buffer, which nothing writes after the decode.
func (c *Checker) parse(proof string) (hdr header, cl string, signing string, sig []byte, err error) {
	i := strings.IndexByte(proof, '.')
	j := -1
	if i >= 0 {
		if j = strings.IndexByte(proof[i+1:], '.'); j >= 0 {
			j += i + 1
		}
	}
	if j < 0 || strings.IndexByte(proof[j+1:], '.') >= 0 {
		return hdr, "", "", nil, invalid("not a compact JWS of three segments")
	}
	hs, cs, ss := proof[:i], proof[i+1:j], proof[j+1:]
	buf := make([]byte, c.b64.DecodedLen(len(hs))+c.b64.DecodedLen(len(cs))+c.b64.DecodedLen(len(ss)))
	hn, err1 := c.b64.Decode(buf, readOnlyBytes(hs))
	cn, err2 := c.b64.Decode(buf[hn:], readOnlyBytes(cs))
	sn, err3 := c.b64.Decode(buf[hn+cn:], readOnlyBytes(ss))
	if err1 != nil || err2 != nil || err3 != nil {
		return hdr, "", "", nil, invalid("a segment is not base64url")
	}
	hb, cb := bufString(buf[:hn]), bufString(buf[hn:hn+cn])
	if hdr, err = readHeader(hb); err != nil {
		return hdr, "", "", nil, invalid("header: %v", err)
	}
	if err = scanObject(cb, nil); err != nil {
		return hdr, "", "", nil, invalid("claims: %v", err)
	}
	if hdr.crit {
		return hdr, "", "", nil, invalid("crit header: no extension is understood")
	}
	return hdr, cb, proof[:j], buf[hn+cn : hn+cn+sn], nil
}

// readHeader reads the members of the JOSE header h that the checks use.
func readHeader(h string) (header, error) {
	var hdr header
	err := scanObject(h, func(name, v string) {
		switch name {
		case "typ":
			hdr.typ = v
		case "alg":
			hdr.alg = v
		case "jwk":
			hdr.jwk = v
		case "crit":
			hdr.crit = true
		}
	})
	return hdr, err
}

// scanObject validates s as one JSON object without duplicate member names
// and calls member, when not nil, with each member's unescaped name and raw
// value, in order.
func scanObject(s string, member func(name, value string)) error {
	it, err := jsonscan.NewMembers(s)
	if err != nil {
		return err
	}
	var seen jsonscan.Names
	for {
		mb, ok, err := it.Next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if !seen.Add(mb.Name) {
			return duplicateError(mb.Name)
		}
		if member != nil {
			member(mb.Name, s[mb.Start:mb.End])
		}
	}
}

// duplicateError is the detail of a member name seen twice.
func duplicateError(name string) error {
	return &dupError{name}
}

type dupError struct{ name string }

func (e *dupError) Error() string { return jsonscan.ErrDupMember.Error() + " " + quote(e.name) }

func (e *dupError) Unwrap() error { return jsonscan.ErrDupMember }

// stringValue reads the raw JSON value v (validated by the scanner) as a
// string the way encoding/json unmarshals one into a Go string: a string
// literal unescaped, null as "" (left unset), any other value ok=false.
func stringValue(v string) (s string, ok bool) {
	switch {
	case v == "null":
		return "", true
	case len(v) >= 2 && v[0] == '"':
		return jsonscan.Unescape(v[1 : len(v)-1]), true
	}
	return "", false
}

// stringMember is the string member name of raw value v ("" when absent).
func stringMember(name, v string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("no %s", name)
	}
	s, ok := stringValue(v)
	if !ok {
		return "", fmt.Errorf("%s is not a string", name)
	}
	return s, nil
}

// readClaims reads and checks the claims set cl (already validated by
// scanObject): jti, htm and htu non-empty strings, iat a NumericDate, ath a
// string, required when the proof comes with an access token.
func readClaims(cl string, withToken bool) (proofClaims, error) {
	var raw struct{ jti, htm, htu, iat, ath string }
	// A validated claims set: scanObject only repeats the walk.
	_ = scanObject(cl, func(name, v string) {
		switch name {
		case "jti":
			raw.jti = v
		case "htm":
			raw.htm = v
		case "htu":
			raw.htu = v
		case "iat":
			raw.iat = v
		case "ath":
			raw.ath = v
		}
	})
	var pc proofClaims
	for _, f := range [...]struct {
		name, raw string
		dst       *string
	}{{"jti", raw.jti, &pc.jti}, {"htm", raw.htm, &pc.htm}, {"htu", raw.htu, &pc.htu}} {
		s, err := stringMember(f.name, f.raw)
		if err != nil {
			return pc, invalid("%v", err)
		}
		if s == "" {
			return pc, invalid("empty %s", f.name)
		}
		*f.dst = s
	}
	if len(pc.jti) > MaxJTIBytes {
		return pc, invalid("jti of %d bytes, limit %d", len(pc.jti), MaxJTIBytes)
	}
	if raw.iat == "" {
		return pc, invalid("no iat")
	}
	iat, ok := numberValue(raw.iat)
	if !ok || iat.Beyond(1e11) {
		return pc, invalid("iat is not a NumericDate")
	}
	pc.iat = iat.Time()
	if raw.ath != "" {
		s, err := stringMember("ath", raw.ath)
		if err != nil {
			return pc, invalid("%v", err)
		}
		pc.ath, pc.hasAth = s, true
	}
	if withToken && !pc.hasAth {
		return pc, invalid("no ath, and the proof comes with an access token")
	}
	return pc, nil
}

// numberValue reads the raw JSON value v as a NumericDate, exactly
// (internal/numericdate): a number of any spelling, null as 0 (as
// encoding/json unmarshals one into a float64), any other value ok=false.
func numberValue(v string) (numericdate.Value, bool) {
	if v == "null" {
		return numericdate.Value{}, true
	}
	return numericdate.Read(v)
}

// bufString is the string of b, without a copy: b is a decode buffer that
// nothing writes after.
func bufString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// readOnlyBytes is the bytes of s without a copy, for a function that only
// reads them and keeps nothing (a base64 decode, a hash).
func readOnlyBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
