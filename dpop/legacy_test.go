package dpop

// The proof reader before the strict scanner and the key cache (the code
// of this package up to issue 31), kept as the fuzz oracle's reference:
// FuzzRead holds the new reader to its verdicts.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/numericdate"
	"github.com/jwksverify/jwksverify/verify"
)

// parse splits a compact JWS and decodes its header and claims.
func (c *Checker) legacyParse(proof string) (hdr, cl map[string]json.RawMessage, signing string, sig []byte, err error) {
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return nil, nil, "", nil, invalid("not a compact JWS of three segments")
	}
	hb, err1 := c.b64.DecodeString(parts[0])
	cb, err2 := c.b64.DecodeString(parts[1])
	sig, err3 := c.b64.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, nil, "", nil, invalid("a segment is not base64url")
	}
	if hdr, err = legacyObject(hb); err != nil {
		return nil, nil, "", nil, invalid("header: %v", err)
	}
	if cl, err = legacyObject(cb); err != nil {
		return nil, nil, "", nil, invalid("claims: %v", err)
	}
	if _, ok := hdr["crit"]; ok {
		return nil, nil, "", nil, invalid("crit header: no extension is understood")
	}
	return hdr, cl, parts[0] + "." + parts[1], sig, nil
}

var errLegacyDuplicate = errors.New("duplicate member")

// object decodes a JSON object into its members, refusing duplicate names
// (two parsers must never disagree on a member) and trailing data.
func legacyObject(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errors.New("not a JSON object")
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errors.New("not a JSON object")
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%w %s", errLegacyDuplicate, quote(name))
		}
		m[name] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the object")
	}
	return m, nil
}

// stringMember returns the string member name of m.
func legacyStringMember(m map[string]json.RawMessage, name string) (string, error) {
	raw, ok := m[name]
	if !ok {
		return "", fmt.Errorf("no %s", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s is not a string", name)
	}
	return s, nil
}

func legacyReadClaims(cl map[string]json.RawMessage, withToken bool) (proofClaims, error) {
	var pc proofClaims
	for _, f := range []struct {
		name string
		dst  *string
	}{{"jti", &pc.jti}, {"htm", &pc.htm}, {"htu", &pc.htu}} {
		s, err := legacyStringMember(cl, f.name)
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
	raw, ok := cl["iat"]
	if !ok {
		return pc, invalid("no iat")
	}
	// A number or null as encoding/json reads one into a float64, its
	// value read exactly: a float64 misreads long spellings
	// (internal/numericdate's FuzzRead holds that reader to math/big).
	var iat float64
	if err := json.Unmarshal(raw, &iat); err != nil {
		return pc, invalid("iat is not a NumericDate")
	}
	var d numericdate.Value
	if string(raw) != "null" {
		d, _ = numericdate.Read(string(raw))
	}
	if d.Beyond(1e11) {
		return pc, invalid("iat is not a NumericDate")
	}
	pc.iat = d.Time()
	if _, ok := cl["ath"]; ok {
		s, err := legacyStringMember(cl, "ath")
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

// privateMembers are the JWK members of private (or symmetric) keys
// (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2).
var legacyPrivateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

// publicKey builds the proof's jwk header into a key (cache.NewKey applies
// the key-size and curve rules), refusing private members, and checks that
// it fits alg by package verify's rule.
func legacyPublicKey(raw json.RawMessage, alg string) (*cache.Key, error) {
	if raw == nil {
		return nil, invalid("no jwk header (a kid alone is not accepted)")
	}
	m, err := legacyObject(raw)
	if err != nil {
		return nil, invalid("jwk: %v", err)
	}
	for _, p := range legacyPrivateMembers {
		if _, ok := m[p]; ok {
			return nil, invalid("jwk holds the private member %s", quote(p))
		}
	}
	str := func(name string) string { s, _ := legacyStringMember(m, name); return s }
	pub, err := jwkPublic(str("kty"), str("crv"), str)
	if err != nil {
		return nil, invalid("jwk: %v", err)
	}
	meta := cache.KeyMeta{Alg: str("alg"), Use: str("use")}
	if _, ok := m["key_ops"]; ok {
		if err := json.Unmarshal(m["key_ops"], &meta.KeyOps); err != nil || meta.KeyOps == nil {
			return nil, invalid("jwk: key_ops is not an array of strings")
		}
	}
	key, err := cache.NewKey(pub, meta)
	if err != nil {
		return nil, invalid("jwk: %v", err)
	}
	if err := verify.KeyFits(key, alg); err != nil {
		return nil, invalid("jwk does not fit %s: %v", alg, err)
	}
	return key, nil
}
