package jsonscan

import (
	"encoding/json"
	"strings"
)

// AsRead returns the valid JSON value v as encoding/json (and so the
// verifier, the policies, the claim headers and revocation) reads it: each
// \u escape of a lone UTF-16 surrogate is U+FFFD, numbers stay as written,
// an object's members are in name order. A value jwksverify vouches for (a
// minted token's claim, an introspection answer) says what was decided on,
// one way to every reader: Python's and JavaScript's JSON keep the
// surrogate, Rust's serde_json refuses it. "" if v does not decode. Callers
// use it for values that hold a lone surrogate ([LoneSurrogate]) and pass
// every other value byte for byte.
func AsRead(v string) string {
	d := json.NewDecoder(strings.NewReader(v))
	d.UseNumber() // numbers exactly as written
	var x any
	if err := d.Decode(&x); err != nil {
		return ""
	}
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(x); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}
