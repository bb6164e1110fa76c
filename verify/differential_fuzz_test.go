package verify_test

import (
	"context"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// The token differential against golang-jwt (docs/DECISIONS.md, "Token
// differential against golang-jwt (nineteenth session)"): every token the
// verifier accepts under a configuration, golang-jwt's parser configured as
// strictly accepts too, and both read the same iss, sub, aud and exp. The
// verifier may refuse more (strict JSON, crit, strict base64url, …);
// golangJWTRefusal lists the few accepts golang-jwt refuses for a reason of
// its own, each written down in DECISIONS.

// diffConfig is one configuration of the differential: the verifier's
// issuer, and the same policy told to golang-jwt.
type diffConfig struct {
	name   string
	issuer verify.Issuer // Keys are filled in by diffSetup
	// second adds issuer issB beside issuer, with issuer's policy and a
	// key set of its own: ec256-b under the kid k-ES256, which issuer's
	// set gives to ec256-a. golang-jwt routes a token by its iss as read
	// unverified, as the verifier does.
	second     bool
	algs       []string      // jwt.WithValidMethods
	leeway     time.Duration // jwt.WithLeeway: the issuer's, defaults applied
	requireExp bool          // jwt.WithExpirationRequired
}

// diffConfigs are the configurations the fuzzer and the table choose from.
var diffConfigs = []diffConfig{
	{
		name:       "default",
		issuer:     verify.Issuer{Issuer: issA, Audiences: []string{aud}, AllowHMAC: true},
		algs:       testkeys.Algorithms,
		leeway:     verify.DefaultLeeway,
		requireExp: true,
	},
	{
		name: "asymmetric-no-leeway-exp-optional",
		issuer: verify.Issuer{Issuer: issA, Audiences: []string{aud, "api://billing"},
			Algorithms: []string{"RS256", "PS256", "ES256", "EdDSA"}, Leeway: -1, RequiredClaims: []string{}},
		algs: []string{"RS256", "PS256", "ES256", "EdDSA"},
	},
	{
		name: "hs256-max-leeway",
		issuer: verify.Issuer{Issuer: issA, Audiences: []string{aud}, Algorithms: []string{"HS256"},
			Leeway: verify.MaxLeeway, RequiredClaims: []string{"exp"}},
		algs:       []string{"HS256"},
		leeway:     verify.MaxLeeway,
		requireExp: true,
	},
	{
		name:       "two-issuers",
		issuer:     verify.Issuer{Issuer: issA, Audiences: []string{aud}, AllowHMAC: true},
		second:     true,
		algs:       testkeys.Algorithms,
		leeway:     verify.DefaultLeeway,
		requireExp: true,
	},
}

// diffSigner is how a differential token is signed: an algorithm and its key.
type diffSigner struct {
	alg string
	key func() any
}

// diffSigners are the signers the fuzzer picks by index (signerHS256, …):
// one per key type, HS256 keyed with the PEM text of the RSA key k-RS256
// names (the classic algorithm confusion), and a key issA never trusts.
var diffSigners = []diffSigner{
	{"HS256", func() any { return testkeys.SigningKey("HS256") }},
	{"RS256", func() any { return testkeys.SigningKey("RS256") }},
	{"PS256", func() any { return testkeys.SigningKey("PS256") }},
	{"ES256", func() any { return testkeys.SigningKey("ES256") }},
	{"EdDSA", func() any { return testkeys.SigningKey("EdDSA") }},
	{"HS256", rsaPublicPEM},
	{"ES256", func() any { return testkeys.Private(testkeys.EC256B) }},
}

// Indexes of diffSigners.
const (
	signerHS256 uint8 = iota
	signerRS256
	signerPS256
	signerES256
	signerEdDSA
	// signerConfusion signs HS256 with an RSA public key's PEM bytes.
	signerConfusion
	// signerUntrusted signs ES256 with ec256-b, a key issA never holds:
	// the key a header's jwk embeds, and the second issuer's own key in
	// the two-issuers configuration.
	signerUntrusted
)

func rsaPublicPEM() any {
	der, err := x509.MarshalPKIXPublicKey(testkeys.Public(testkeys.NameForAlg("RS256")))
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Encoding mutations of a differential token (bits of a uint16): those on
// the header and claims segments are made before signing, so that the
// signature covers the text as sent and only the parsing layer can refuse.
const (
	mutPadHeader     uint16 = 1 << iota // '=' padding on the header segment
	mutPadClaims                        // '=' padding on the claims segment
	mutPadSig                           // '=' padding on the signature
	mutStdAlphabet                      // '+' and '/' for '-' and '_' in header and claims
	mutBitsHeader                       // non-zero trailing bits in the header segment
	mutBitsClaims                       // non-zero trailing bits in the claims segment
	mutBitsSig                          // non-zero trailing bits in the signature
	mutFourth                           // a fourth segment ("." appended)
	mutNewline                          // a line feed inside the claims segment
	mutSpace                            // a space before the token
	mutExtraDot                         // an empty segment after the header ("h..p.s")
	mutSigZeroPrefix                    // a zero byte before the signature
	mutSigTrimZero                      // the signature's leading zero byte cut, if it has one
	mutSigMalleate                      // RSA: s + N; ECDSA: (r, n − s); Ed25519: S + L (when it fits)
	mutLast
)

// diffToken signs header and payload (raw JSON text) with signer, applying
// the encoding mutations mut.
func diffToken(t testing.TB, signer int, header, payload string, mut uint16) string {
	t.Helper()
	enc := base64.RawURLEncoding
	h, p := enc.EncodeToString([]byte(header)), enc.EncodeToString([]byte(payload))
	if mut&mutBitsHeader != 0 {
		h = trailingBits(h)
	}
	if mut&mutBitsClaims != 0 {
		p = trailingBits(p)
	}
	if mut&mutStdAlphabet != 0 {
		std := strings.NewReplacer("-", "+", "_", "/")
		h, p = std.Replace(h), std.Replace(p)
	}
	if mut&mutPadHeader != 0 {
		h = pad(h)
	}
	if mut&mutPadClaims != 0 {
		p = pad(p)
	}
	if mut&mutNewline != 0 {
		p = p[:len(p)/2] + "\n" + p[len(p)/2:]
	}
	if mut&mutExtraDot != 0 {
		h += "."
	}
	s := diffSigners[signer]
	in := h + "." + p
	sig, err := jwt.GetSigningMethod(s.alg).Sign(in, s.key())
	if err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	if mut&mutSigMalleate != 0 {
		sig = malleate(s.alg, sig)
	}
	if mut&mutSigZeroPrefix != 0 {
		sig = append([]byte{0}, sig...)
	}
	if mut&mutSigTrimZero != 0 && len(sig) > 0 && sig[0] == 0 {
		sig = sig[1:]
	}
	sg := enc.EncodeToString(sig)
	if mut&mutBitsSig != 0 {
		sg = trailingBits(sg)
	}
	if mut&mutPadSig != 0 {
		sg = pad(sg)
	}
	tok := in + "." + sg
	if mut&mutFourth != 0 {
		tok += "."
	}
	if mut&mutSpace != 0 {
		tok = " " + tok
	}
	return tok
}

// malleate returns the other spelling of a signature of alg that the
// arithmetic verifies but the encoding rules forbid (RSA: a representative
// at or above the modulus, RFC 8017 §5.2.2; Ed25519: S at or above the group
// order, RFC 8032 §5.1.7), or for ECDSA the other valid signature (r, n − s),
// which JWS does not forbid. An RSA signature that s + N does not fit in
// is returned as it is, as is any signature of another alg.
func malleate(alg string, sig []byte) []byte {
	out := slices.Clone(sig)
	switch alg {
	case "RS256", "PS256":
		n := testkeys.Public(testkeys.RSA2048A).(*rsa.PublicKey).N
		v := new(big.Int).Add(new(big.Int).SetBytes(sig), n)
		if v.BitLen() <= 8*len(sig) {
			v.FillBytes(out)
		}
	case "ES256":
		n := elliptic.P256().Params().N
		if len(sig) == 64 {
			new(big.Int).Sub(n, new(big.Int).SetBytes(sig[32:])).FillBytes(out[32:])
		}
	case "EdDSA":
		if len(sig) == 64 {
			l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
			le := slices.Clone(sig[32:])
			slices.Reverse(le)
			v := new(big.Int).Add(new(big.Int).SetBytes(le), l)
			v.FillBytes(out[32:])
			slices.Reverse(out[32:])
		}
	}
	return out
}

// pad adds the '=' padding the standard encoding would have.
func pad(seg string) string {
	if n := len(seg) % 4; n != 0 {
		seg += strings.Repeat("=", 4-n)
	}
	return seg
}

// trailingBits sets the lowest of the bits the last character of a raw
// base64url segment carries beyond the data (non-canonical: a lenient
// decoder reads the same bytes). A segment without such bits is unchanged.
func trailingBits(seg string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	if len(seg)%4 < 2 {
		return seg
	}
	i := strings.IndexByte(alphabet, seg[len(seg)-1])
	if i < 0 {
		return seg
	}
	return seg[:len(seg)-1] + string(alphabet[i|1])
}

// diffKeys holds the verification key of each kid of allKeys, as golang-jwt
// takes them, and every key once for a token without kid.
type diffKeys struct {
	byKid map[string]any
	all   jwt.VerificationKeySet
}

// newDiffKeysB holds the key set of the second issuer (diffConfig.second).
func newDiffKeysB() *diffKeys {
	pub := testkeys.Public(testkeys.EC256B)
	return &diffKeys{byKid: map[string]any{kidFor("ES256"): pub}, all: jwt.VerificationKeySet{Keys: []jwt.VerificationKey{pub}}}
}

func newDiffKeys() *diffKeys {
	k := &diffKeys{byKid: make(map[string]any)}
	for _, alg := range testkeys.Algorithms {
		var pub any = testkeys.Secret()
		if n := testkeys.NameForAlg(alg); n != "" {
			pub = testkeys.Public(n)
		}
		k.byKid[kidFor(alg)] = pub
		k.all.Keys = append(k.all.Keys, pub)
	}
	return k
}

// keyfunc selects the key as the verifier does: by kid exactly; a token
// without kid (or with "kid": "") is tried against every key.
func (k *diffKeys) keyfunc(tok *jwt.Token) (any, error) {
	raw, ok := tok.Header["kid"]
	if !ok {
		return k.all, nil
	}
	kid, ok := raw.(string)
	switch {
	case !ok:
		return nil, errors.New("kid is not a string")
	case kid == "":
		return k.all, nil
	}
	key, ok := k.byKid[kid]
	if !ok {
		return nil, errors.New("unknown kid")
	}
	return key, nil
}

// diffHarness is a verifier per configuration, and golang-jwt's parser
// and keys for each of its issuers.
type diffHarness struct {
	verifiers []*verify.Verifier
	routes    [][]diffRoute
}

// diffRoute is golang-jwt configured for one issuer.
type diffRoute struct {
	iss    string
	parser *jwt.Parser
	keys   *diffKeys
}

// errNoIssuer is golang-jwt's answer (as the harness routes it) to a token
// whose iss names none of the configuration's issuers.
var errNoIssuer = errors.New("iss names no configured issuer")

func diffSetup(t testing.TB) *diffHarness {
	t.Helper()
	keys := allKeys(t)
	keysB := keysOf(newKey(t, testkeys.Public(testkeys.EC256B), cache.KeyMeta{Kid: kidFor("ES256")}))
	h := &diffHarness{}
	for _, c := range diffConfigs {
		is := c.issuer
		is.Keys = keys
		issuers := []verify.Issuer{is}
		routes := []diffRoute{{is.Issuer, c.parser(is.Issuer), newDiffKeys()}}
		if c.second {
			b := is
			b.Issuer, b.Keys = issB, keysB
			issuers = append(issuers, b)
			routes = append(routes, diffRoute{issB, c.parser(issB), newDiffKeysB()})
		}
		h.verifiers = append(h.verifiers, newVerifier(t, verify.Options{Issuers: issuers}))
		h.routes = append(h.routes, routes)
	}
	return h
}

// parser is golang-jwt's parser for c's policy and the issuer iss.
func (c diffConfig) parser(iss string) *jwt.Parser {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(c.algs),
		jwt.WithIssuer(iss),
		jwt.WithAudience(c.issuer.Audiences...),
		jwt.WithLeeway(c.leeway),
		jwt.WithTimeFunc(func() time.Time { return t0 }),
	}
	if c.requireExp {
		opts = append(opts, jwt.WithExpirationRequired())
	}
	return jwt.NewParser(opts...)
}

// run verifies token under configuration cfg with both libraries.
func (h *diffHarness) run(cfg int, token string) (*verify.Result, error, *jwt.Token, error) {
	res, err := h.verifiers[cfg].Verify(context.Background(), token)
	routes := h.routes[cfg]
	r := routes[0]
	if len(routes) > 1 {
		// Route by the iss golang-jwt reads unverified; a token it cannot
		// read goes to the first issuer, whose parser refuses it alike.
		if u, _, perr := jwt.NewParser().ParseUnverified(token, jwt.MapClaims{}); perr == nil {
			iss, _ := u.Claims.GetIssuer()
			i := slices.IndexFunc(routes, func(r diffRoute) bool { return r.iss == iss })
			if i < 0 {
				return res, err, nil, errNoIssuer
			}
			r = routes[i]
		}
	}
	tok, gerr := r.parser.Parse(token, r.keys.keyfunc)
	return res, err, tok, gerr
}

// check asserts the property on one token: an accept by the verifier is an
// accept by golang-jwt (but for golangJWTRefusal's reasons) with the same
// iss, sub, aud and exp.
func (h *diffHarness) check(t *testing.T, cfg int, token string) {
	t.Helper()
	res, err, tok, gerr := h.run(cfg, token)
	if err != nil {
		return // the verifier may be stricter
	}
	if gerr != nil {
		if why := golangJWTRefusal(diffConfigs[cfg], res, gerr); why != "" {
			return
		}
		t.Fatalf("config %s: Verify() accepted (iss %q sub %q aud %q exp %s), golang-jwt refused: %v",
			diffConfigs[cfg].name, res.Issuer, res.Subject, res.Audience, res.ExpiresAt, gerr)
	}
	mc := tok.Claims.(jwt.MapClaims)
	iss, _ := mc.GetIssuer()
	sub, _ := mc.GetSubject()
	auds, _ := mc.GetAudience()
	if iss != res.Issuer || sub != res.Subject || !slices.Equal([]string(auds), res.Audience) && len(auds)+len(res.Audience) > 0 {
		t.Fatalf("config %s: Verify() iss %q sub %q aud %q, golang-jwt %q %q %q",
			diffConfigs[cfg].name, res.Issuer, res.Subject, res.Audience, iss, sub, auds)
	}
	exp, _ := mc.GetExpirationTime()
	if !sameExp(res.ExpiresAt, exp) {
		t.Fatalf("config %s: Verify() exp %s, golang-jwt %v", diffConfigs[cfg].name, res.ExpiresAt, exp)
	}
}

// sameExp reports whether the verifier's exp (zero: absent) and
// golang-jwt's (nil: absent) are the same instant, as far as golang-jwt's
// reading can tell: it truncates to whole seconds (jwt.TimePrecision) after
// going through a float64, which can round .9999999999 up to the next
// second, so they agree within a second.
func sameExp(ours time.Time, theirs *jwt.NumericDate) bool {
	if theirs == nil {
		return ours.IsZero()
	}
	if ours.Equal(maxExp) {
		// The verifier clamps exp to year 9999; golang-jwt's is later.
		return !theirs.Before(maxExp)
	}
	d := ours.Sub(theirs.Time)
	return d > -time.Second && d < time.Second
}

// maxExp is the latest exp the verifier reads: the end of year 9999.
var maxExp = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// golangJWTRefusal says why golang-jwt refuses a token the verifier
// accepted under c (res), when that is one of the differences written down
// in DECISIONS; "" when it is not.
func golangJWTRefusal(c diffConfig, res *verify.Result, gerr error) string {
	exp := res.ExpiresAt
	switch {
	case errors.Is(gerr, jwt.ErrTokenExpired) && exp.After(t0.Add(-c.leeway)) && !exp.Truncate(time.Second).After(t0.Add(-c.leeway)):
		// jwt.TimePrecision: golang-jwt truncates exp to the second
		// before comparing; the verifier reads it to the nanosecond. An
		// exp that is not after now − leeway even so is no excuse.
		return "exp truncated to the second"
	case errors.Is(gerr, jwt.ErrTokenExpired) && expLiteral(res.Claims) >= 0x1p63:
		// int64(f) of a float64 exp beyond the int64 range is
		// undefined in Go (amd64: the smallest int64, long past); the
		// verifier clamps exp to the end of year 9999.
		return "exp beyond int64 seconds"
	case errors.Is(gerr, jwt.ErrTokenMalformed) && (floatRange(res.Header) || floatRange(res.Claims)):
		// encoding/json refuses a number beyond float64 into any; the
		// verifier reads the members it knows and passes the rest on.
		return "a number beyond float64"
	}
	return ""
}

// expLiteral returns the exp claim of the JSON object claims as a float64
// (0 when absent or not a number).
func expLiteral(claims []byte) float64 {
	var m map[string]json.RawMessage
	if json.Unmarshal(claims, &m) != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(string(m["exp"]), 64)
	return f
}

// floatRange reports whether the JSON text (a header or claims set the
// verifier accepted) holds a number beyond the float64 range, which encoding/json
// refuses to decode into an any.
func floatRange(text []byte) bool {
	var v any
	err := json.Unmarshal(text, &v)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || !strings.HasPrefix(te.Value, "number ") {
		return false
	}
	_, perr := strconv.ParseFloat(strings.TrimPrefix(te.Value, "number "), 64)
	return errors.Is(perr, strconv.ErrRange)
}

// FuzzVerifyDifferential signs a header and claims set chosen by the fuzzer
// (raw JSON) with one of diffSigners, applies encoding mutations, and holds
// Verify to golang-jwt under one of diffConfigs: what the verifier accepts,
// golang-jwt accepts, with the same iss, sub, aud and exp.
func FuzzVerifyDifferential(f *testing.F) {
	for _, c := range diffCases() {
		f.Add(c.cfg, c.signer, c.header, c.payload, c.mut)
	}
	// Filled in (fillBit): a claims set and a header that name only what
	// the fuzzer is to vary.
	f.Add(uint8(fillBit), signerHS256|fillBit, `{}`, `{}`, uint16(0))
	f.Add(uint8(fillBit|1), signerEdDSA|fillBit, `{"typ":"JWT"}`, fmt.Sprintf(`{"nbf":%d.5,"iat":%d}`, now, now), uint16(0))
	f.Add(uint8(fillBit|2), signerHS256|fillBit, `{"kid":"k-HS512"}`, fmt.Sprintf(`{"exp":%d.999999999,"aud":["x","%s"]}`, now-600, aud), uint16(0))
	h := diffSetup(f)
	f.Fuzz(func(t *testing.T, cfg, signer uint8, header, payload string, mut uint16) {
		if len(header)+len(payload) > 4096 {
			return
		}
		c, s := int(cfg&^fillBit)%len(diffConfigs), int(signer&^fillBit)%len(diffSigners)
		if signer&fillBit != 0 {
			header = fill(header, `"alg":"`+diffSigners[s].alg+`"`)
		}
		if cfg&fillBit != 0 {
			payload = fill(payload, mIss, mSub, mAud, mExp)
		}
		h.check(t, c, diffToken(t, s, header, payload, mut%mutLast))
	})
}

// fillBit, set in the fuzzer's cfg (signer), fills the claims set (the
// header) with the members of a valid one that it does not name, so that
// most inputs reach the claims checks instead of stopping at a missing
// iss or alg.
const fillBit = 0x80

// fill inserts each of members (`"name":value`) whose quoted name the JSON
// text obj does not hold right after obj's opening brace; obj not starting
// with '{' is returned as it is.
func fill(obj string, members ...string) string {
	if !strings.HasPrefix(obj, "{") {
		return obj
	}
	rest := obj[1:]
	for _, m := range members {
		name := m[:strings.IndexByte(m[1:], '"')+2]
		if strings.Contains(obj, name) {
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(rest, " \t\r\n"), "}") {
			rest = m + rest
		} else {
			rest = m + "," + rest
		}
	}
	return "{" + rest
}
