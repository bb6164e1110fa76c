package dpop_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// FuzzCheckSigned signs a proof (a header of a fuzzed typ and extra
// members, a fuzzed claims set) with a fixed Ed25519 key, so that the
// checks behind the signature are reached (FuzzCheck stops at it), and
// compares the verdict with an independent reading of RFC 9449 §4.3 by
// encoding/json (readSignedProof): an accepted proof holds every rule (typ
// dpop+jwt, alg EdDSA, the key's public jwk, no crit, jti present, htm
// exactly the request's method, htu the request's URL up to the
// normalizations the package documents, iat within [now - MaxAge, now +
// leeway], ath the token's base64url SHA-256), and a proof that holds them
// all in a plain spelling is accepted. The replay store says every jti is
// fresh and records the key it was asked.
func FuzzCheckSigned(f *testing.F) {
	priv := testkeys.Private(testkeys.Ed25519A).(ed25519.PrivateKey)
	jwk := string(testkeys.JWKJSON(testkeys.JWK{Key: priv.Public()}))
	claims := func(over string) string {
		c := map[string]any{"jti": "j-1", "htm": "POST", "htu": "https://api.example.com/orders/1", "iat": t0.Unix(), "ath": ath(accessToken)}
		if over != "" {
			var o map[string]any
			if err := json.Unmarshal([]byte(over), &o); err != nil {
				panic(err)
			}
			for k, v := range o {
				if v == nil {
					delete(c, k)
					continue
				}
				c[k] = v
			}
		}
		b, _ := json.Marshal(c)
		return string(b)
	}
	// One rule broken or bent at a time, so that the fuzzer starts at each
	// check's branches.
	for _, over := range []string{``, `{"jti":null}`, `{"jti":""}`, `{"jti":"` + strings.Repeat("j", dpop.MaxJTIBytes+1) + `"}`,
		`{"htm":"post"}`, `{"htm":null}`, `{"htu":"HTTPS://API.Example.COM:443/orders/1?a=b#c"}`, `{"htu":"https://api.example.com/%6Frders/1"}`,
		`{"htu":"https://api.example.com./orders/1"}`, `{"htu":"https://api.example.com/orders/./1"}`, `{"htu":"https://api.example.com:8443/orders/1"}`,
		`{"htu":"http://api.example.com/orders/1"}`, `{"htu":"https://u@api.example.com/orders/1"}`,
		`{"iat":` + fmt.Sprint(t0.Unix()-60) + `}`, `{"iat":` + fmt.Sprint(t0.Unix()-59) + `.5}`, `{"iat":` + fmt.Sprint(t0.Unix()+30) + `}`,
		`{"iat":` + fmt.Sprint(t0.Unix()+30) + `.5}`, `{"iat":"1"}`, `{"iat":null}`, `{"ath":null}`, `{"ath":"x"}`} {
		f.Add("dpop+jwt", "", claims(over))
	}
	f.Add("dpop+jwt", "", `{"jti":"j","JTI":"k","htm":"POST","htu":"https://api.example.com/orders/1","iat":`+fmt.Sprint(t0.Unix())+`,"ath":"`+ath(accessToken)+`"}`)
	f.Add("dpop+jwt", "", `{"jti":"j","htm":"POST","htu":"https://api.example.com/orders/1","iat":`+fmt.Sprint(t0.Unix())+`e0,"ath":"`+ath(accessToken)+`","x":{"a":1,"A":2}}`)
	for _, h := range [][2]string{{"DPoP+JWT", ""}, {"jwt", ""}, {"dpop+jwt", `,"crit":["x"]`}, {"dpop+jwt", `,"x":{"y":1}`},
		{"dpop+jwt", `,"alg":"ES256"`}, {"dpop+jwt", `,"Typ":"jwt"`}} {
		f.Add(h[0], h[1], claims(""))
	}
	store := &recordingFresh{}
	c := newChecker(f, dpop.Options{Replay: store})
	pub := priv.Public().(ed25519.PublicKey)
	jkt := thumb(f, testkeys.Ed25519A)
	in := input("", jkt)
	// The header is typ (a JSON string), alg EdDSA and the signing key's
	// jwk, then extra's members: the checks before the signature are
	// FuzzCheck's, and a fuzzed header would rarely keep the jwk whole.
	f.Fuzz(func(t *testing.T, typ, extra, claims string) {
		q, _ := json.Marshal(typ)
		hdr := `{"typ":` + string(q) + `,"alg":"EdDSA","jwk":` + jwk + extra + `}`
		b64 := base64.RawURLEncoding
		signing := b64.EncodeToString([]byte(hdr)) + "." + b64.EncodeToString([]byte(claims))
		p := signing + "." + b64.EncodeToString(ed25519.Sign(priv, []byte(signing)))
		in.Proofs = []string{p}
		store.asked = nil
		got, err := c.Check(context.Background(), in, t0)
		rd := readSignedProof(hdr, claims, pub, in.Leeway)
		switch {
		case err != nil && !errors.Is(err, verify.ErrInvalidDPoPProof):
			t.Fatalf("Check() = %v: not invalid_dpop_proof (the jwk is the token's key, the store answers)", err)
		case err == nil && rd.broken != "":
			t.Fatalf("Check() accepted a proof whose %s (header %s, claims %s)", rd.broken, hdr, claims)
		case err != nil && rd.broken == "" && rd.plain && len(p) <= dpop.DefaultMaxProofBytes:
			t.Fatalf("Check() = %v for a plain proof that holds every rule (header %s, claims %s)", err, hdr, claims)
		case err == nil:
			if got.JTI != rd.jti || got.Alg != "EdDSA" || got.Thumbprint != jkt || len(store.asked) != 1 || store.asked[0] != dpop.ReplayKey(issuer, rd.jti) {
				t.Fatalf("Check() = %+v, store asked %x; want jti %q", got, store.asked, rd.jti)
			}
		}
	})
}

// recordingFresh is a replay store to which every key is fresh; it records
// the keys it was asked about.
type recordingFresh struct{ asked [][32]byte }

func (s *recordingFresh) Use(_ context.Context, key [32]byte, _ time.Duration, _ time.Time) (bool, error) {
	s.asked = append(s.asked, key)
	return true, nil
}

// signedReading is readSignedProof's verdict: broken names the first rule
// the proof breaks ("" when none), plain says that it is spelled so that
// no reader could take it another way, and jti is its jti.
type signedReading struct {
	broken string
	plain  bool
	jti    string
}

// readSignedProof reads a proof's header and claims with encoding/json and
// checks RFC 9449 §4.3 against origReq, accessToken and the key pub at
// t0 with the default MaxAge and leeway, written from the RFC rather than
// from the package: names compared exactly, typ as a media type (ASCII
// case-insensitive), htu by sameHTU.
func readSignedProof(hdr, claims string, pub ed25519.PublicKey, leeway time.Duration) signedReading {
	var h, c map[string]any
	if json.Unmarshal([]byte(hdr), &h) != nil || h == nil {
		return signedReading{broken: "header is no JSON object"}
	}
	if json.Unmarshal([]byte(claims), &c) != nil || c == nil {
		return signedReading{broken: "claims are no JSON object"}
	}
	rd := signedReading{plain: plainJSON(hdr) && plainJSON(claims)}
	rd.jti, _ = c["jti"].(string)
	typ, _ := h["typ"].(string)
	jwk, _ := h["jwk"].(map[string]any)
	x, _ := jwk["x"].(string)
	xb, xerr := base64.RawURLEncoding.DecodeString(strings.TrimRight(x, "="))
	_, crit := h["crit"]
	_, priv := jwk["d"]
	htm, _ := c["htm"].(string)
	htu, _ := c["htu"].(string)
	iat, isNum := c["iat"].(float64)
	athv, _ := c["ath"].(string)
	now := float64(t0.Unix())
	switch {
	case !strings.EqualFold(typ, "dpop+jwt") || strings.ContainsFunc(typ, func(r rune) bool { return r >= utf8.RuneSelf }):
		rd.broken = "typ is not dpop+jwt"
	case h["alg"] != "EdDSA":
		rd.broken = "alg is not EdDSA"
	case crit:
		rd.broken = "header has crit"
	case jwk == nil || jwk["kty"] != "OKP" || jwk["crv"] != "Ed25519" || xerr != nil || !pub.Equal(ed25519.PublicKey(xb)) || priv:
		rd.broken = "jwk is not the signing key's public jwk"
	case rd.jti == "" || len(rd.jti) > dpop.MaxJTIBytes:
		rd.broken = "jti is absent, empty or too long"
	case htm != origReq.Method:
		rd.broken = "htm is not the request's method"
	case !sameHTU(htu, false):
		rd.broken = "htu is not the request's URL"
	case !isNum || !(iat > now-dpop.DefaultMaxAge.Seconds()) || !(iat <= now+leeway.Seconds()):
		rd.broken = "iat is outside [now - max_age, now + leeway]"
	case athv != ath(accessToken):
		rd.broken = "ath is not the token's hash"
	}
	// Plain: the header holds typ, alg and jwk only, the jwk kty, crv, x
	// (canonical) and at most an alg of EdDSA; htu in a spelling the
	// normalization must read.
	wantJWK := 3
	if a, ok := jwk["alg"]; ok {
		wantJWK++
		rd.plain = rd.plain && a == "EdDSA"
	}
	if len(h) != 3 || len(jwk) != wantJWK || x != base64.RawURLEncoding.EncodeToString(pub) || !sameHTU(htu, true) {
		rd.plain = false
	}
	return rd
}

// plainHTU is the request's URL (origReq) in the spellings RFC 3986 §6.2.2
// and §6.2.3 make equal and the package promises to read so: the scheme
// and the host in any case, the default port, unreserved characters of
// the path percent-encoded, any query and fragment (RFC 9449 §4.3 9).
var plainHTU = regexp.MustCompile(`^(?i:https)://(?i:api\.example\.com)(?::443)?((?:/|[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})*)(?:\?[A-Za-z0-9._~=&-]*)?(?:#[A-Za-z0-9._~-]*)?$`)

// sameHTU reports whether htu names origReq's URL. Strict, it holds only
// for plainHTU's spellings; else for any htu whose parts, read by net/url
// and fully percent-decoded, lower-cased where case does not count and a
// host's trailing dot dropped, are the request's: a superset of what any
// normalization may take as equal.
func sameHTU(htu string, strict bool) bool {
	if strict {
		// ASCII only: (?i) folds as Unicode does (ſ matches s).
		if strings.ContainsFunc(htu, func(r rune) bool { return r >= utf8.RuneSelf }) {
			return false
		}
		m := plainHTU.FindStringSubmatch(htu)
		if m == nil {
			return false
		}
		p := m[1]
		for i := strings.IndexByte(p, '%'); i >= 0; i = strings.IndexByte(p, '%') {
			b, err := strconv.ParseUint(p[i+1:i+3], 16, 8)
			if err != nil || !isUnreserved(byte(b)) {
				return false
			}
			p = p[:i] + string(rune(b)) + p[i+3:]
		}
		return p == origReq.Path
	}
	u, err := url.Parse(htu)
	if err != nil || !strings.EqualFold(u.Scheme, origReq.Scheme) {
		return false
	}
	port, _ := strconv.Atoi(u.Port())
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".") == origReq.Host && (u.Port() == "" || port == 443) && u.Path == origReq.Path
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
}

// plainJSON reports whether s is one JSON object that every reader reads
// alike: valid UTF-8 and JSON, nested at most 64 deep, and no object in it
// with two names equal under Unicode simple folding (strings.EqualFold, as
// encoding/json matches names to fields).
func plainJSON(s string) bool {
	if !utf8.ValidString(s) || !json.Valid([]byte(s)) {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	type frame struct {
		names []string
		obj   bool
		name  bool // the next token of the object is a name
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return len(stack) == 0
		}
		if name, ok := tok.(string); ok && len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].name {
			n := len(stack)
			for _, o := range stack[n-1].names {
				if strings.EqualFold(o, name) {
					return false
				}
			}
			stack[n-1].names, stack[n-1].name = append(stack[n-1].names, name), false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == 64 {
				return false
			}
			stack = append(stack, frame{obj: tok == json.Delim('{'), name: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].name = true // a member's value ended
		}
	}
}

// TestSameHTU pins the reading FuzzCheckSigned compares htu with.
func TestSameHTU(t *testing.T) {
	for _, tt := range []struct {
		htu           string
		strict, loose bool
	}{
		{"https://api.example.com/orders/1", true, true},
		{"HTTPS://API.EXAMPLE.COM:443/orders/1?q=1#f", true, true},
		{"https://api.example.com/%6frders/%31", true, true},
		{"https://api.example.com./orders/1", false, true},
		{"https://api.example.com/orders%2F1", false, true},
		{"https://api.example.com/Orders/1", false, false},
		{"https://api.example.com:8443/orders/1", false, false},
		{"http://api.example.com/orders/1", false, false},
		{"https://api.example.com/orders/1/", false, false},
		{"httpſ://api.example.com/orders/1", false, false},
	} {
		if got := sameHTU(tt.htu, true); got != tt.strict {
			t.Errorf("sameHTU(%q, strict) = %v, want %v", tt.htu, got, tt.strict)
		}
		if got := sameHTU(tt.htu, false); got != tt.loose {
			t.Errorf("sameHTU(%q, loose) = %v, want %v", tt.htu, got, tt.loose)
		}
	}
}
