package verify_test

import (
	"crypto/ecdsa"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// diffCase is one crafted token of the differential: how it is made, and
// what each library answers under its configuration.
type diffCase struct {
	name    string
	cfg     uint8 // index of diffConfigs
	signer  uint8 // index of diffSigners
	header  string
	payload string
	mut     uint16 // encoding mutations (mut*)
	// want is the verifier's class sentinel, nil for an accept.
	want error
	// wantJWT is golang-jwt's error (matched with errors.Is), nil for an
	// accept, errJWTEither when its answer depends on the platform.
	wantJWT error
}

// errJWTEither marks a case whose golang-jwt answer is not asserted: Go
// leaves int64(f) of a float64 beyond the int64 range to the platform.
var errJWTEither = errors.New("either")

// The members a differential claims set is made of: valid at t0 for
// issA and aud unless replaced.
var (
	now  = t0.Unix()
	mIss = `"iss":"` + issA + `"`
	mSub = `"sub":"alice"`
	mAud = `"aud":"` + aud + `"`
	mExp = fmt.Sprintf(`"exp":%d`, now+3600)
)

// obj joins JSON object members.
func obj(members ...string) string { return "{" + strings.Join(members, ",") + "}" }

// body is a valid claims set with more members added.
func body(more ...string) string { return obj(append([]string{mIss, mSub, mAud, mExp}, more...)...) }

// bodyWithout is body with the member that starts with drop (e.g. `"exp"`)
// replaced by more.
func bodyWithout(drop string, more ...string) string {
	var ms []string
	for _, m := range []string{mIss, mSub, mAud, mExp} {
		if !strings.HasPrefix(m, drop+":") {
			ms = append(ms, m)
		}
	}
	return obj(append(ms, more...)...)
}

// hdr is a header for alg and kid ("" for none), with more members.
func hdr(alg, kid string, more ...string) string {
	ms := []string{`"alg":"` + alg + `"`}
	if kid != "" {
		ms = append(ms, `"kid":"`+kid+`"`)
	}
	return obj(append(ms, more...)...)
}

// untrustedJWK is the public JWK of the key signerUntrusted signs with.
func untrustedJWK() string {
	pt, err := testkeys.Public(testkeys.EC256B).(*ecdsa.PublicKey).Bytes()
	if err != nil {
		panic(err)
	}
	enc := base64.RawURLEncoding
	return `{"kty":"EC","crv":"P-256","x":"` + enc.EncodeToString(pt[1:33]) + `","y":"` + enc.EncodeToString(pt[33:]) + `"}`
}

// diffCases are the crafted tokens: the table's rows and the fuzzer's seeds.
func diffCases() []diffCase {
	hs := hdr("HS256", "k-HS256")
	at := func(d int64) string { return fmt.Sprint(now + d) }
	long := strings.Repeat("a", 17000)
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	return []diffCase{
		// Accepted by both.
		{name: "valid-hs256", signer: signerHS256, header: hs, payload: body()},
		{name: "valid-rs256", signer: signerRS256, header: hdr("RS256", "k-RS256"), payload: body()},
		{name: "valid-ps256", signer: signerPS256, header: hdr("PS256", "k-RS256"), payload: body()},
		{name: "valid-es256", signer: signerES256, header: hdr("ES256", "k-ES256"), payload: body()},
		{name: "valid-eddsa", signer: signerEdDSA, header: hdr("EdDSA", "k-EdDSA"), payload: body()},
		{name: "valid-no-leeway-config", cfg: 1, signer: signerES256, header: hdr("ES256", "k-ES256"), payload: body()},
		{name: "valid-hs256-config", cfg: 2, signer: signerHS256, header: hs, payload: body()},

		// exp, nbf, iat.
		{name: "exp-float", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":`+at(3600)+`.5`)},
		{name: "exp-exponent", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":1.772604367e9`)},
		{name: "exp-string", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":"`+at(3600)+`"`),
			want: verify.ErrMalformed, wantJWT: jwt.ErrInvalidType},
		{name: "exp-null", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":null`),
			want: verify.ErrMalformed, wantJWT: jwt.ErrInvalidType},
		{name: "exp-negative", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":-1`),
			want: verify.ErrExpired, wantJWT: jwt.ErrTokenExpired},
		{name: "exp-zero", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":0`),
			want: verify.ErrExpired, wantJWT: jwt.ErrTokenRequiredClaimMissing},
		{name: "exp-zero-exp-optional", cfg: 1, signer: signerES256, header: hdr("ES256", "k-ES256"), payload: bodyWithout(`"exp"`, `"exp":0`),
			want: verify.ErrExpired}, // golang-jwt reads exp 0 as no exp
		{name: "exp-huge-1e300", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":1e300`),
			wantJWT: errJWTEither}, // the verifier clamps it to year 9999
		{name: "exp-beyond-float64", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":1e400`),
			wantJWT: jwt.ErrTokenMalformed},
		{name: "exp-absent", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`),
			want: verify.ErrMissingClaim, wantJWT: jwt.ErrTokenRequiredClaimMissing},
		{name: "exp-absent-exp-optional", cfg: 1, signer: signerES256, header: hdr("ES256", "k-ES256"), payload: bodyWithout(`"exp"`)},
		{name: "exp-at-now-minus-leeway", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":`+at(-30)),
			want: verify.ErrExpired, wantJWT: jwt.ErrTokenExpired},
		{name: "exp-a-second-inside-leeway", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":`+at(-29))},
		{name: "exp-half-a-second-inside-leeway", signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":`+at(-30)+`.5`),
			wantJWT: jwt.ErrTokenExpired}, // golang-jwt truncates exp to the second
		{name: "exp-at-now-no-leeway", cfg: 1, signer: signerES256, header: hdr("ES256", "k-ES256"), payload: bodyWithout(`"exp"`, `"exp":`+at(0)),
			want: verify.ErrExpired, wantJWT: jwt.ErrTokenExpired},
		{name: "exp-at-now-minus-max-leeway", cfg: 2, signer: signerHS256, header: hs, payload: bodyWithout(`"exp"`, `"exp":`+at(-600)),
			want: verify.ErrExpired, wantJWT: jwt.ErrTokenExpired},
		{name: "nbf-at-now-plus-leeway", signer: signerHS256, header: hs, payload: body(`"nbf":` + at(30))},
		{name: "nbf-a-second-past-leeway", signer: signerHS256, header: hs, payload: body(`"nbf":` + at(31)),
			want: verify.ErrNotYetValid, wantJWT: jwt.ErrTokenNotValidYet},
		{name: "nbf-half-a-second-past-leeway", signer: signerHS256, header: hs, payload: body(`"nbf":` + at(30) + `.5`),
			want: verify.ErrNotYetValid}, // golang-jwt truncates nbf to the second
		{name: "nbf-string", signer: signerHS256, header: hs, payload: body(`"nbf":"` + at(0) + `"`),
			want: verify.ErrMalformed, wantJWT: jwt.ErrInvalidType},
		{name: "nbf-huge-1e300", signer: signerHS256, header: hs, payload: body(`"nbf":1e300`),
			want: verify.ErrNotYetValid, wantJWT: errJWTEither},
		{name: "iat-ahead-of-leeway", signer: signerHS256, header: hs, payload: body(`"iat":` + at(3600)),
			want: verify.ErrNotYetValid}, // golang-jwt checks iat only WithIssuedAt
		{name: "iat-string", signer: signerHS256, header: hs, payload: body(`"iat":"` + at(0) + `"`),
			want: verify.ErrMalformed},
		{name: "iat-negative", signer: signerHS256, header: hs, payload: body(`"iat":-1`)},

		// aud.
		{name: "aud-array", signer: signerHS256, header: hs, payload: bodyWithout(`"aud"`, `"aud":["x","`+aud+`"]`)},
		{name: "aud-second-configured", cfg: 1, signer: signerES256, header: hdr("ES256", "k-ES256"), payload: bodyWithout(`"aud"`, `"aud":["api://billing"]`)},
		{name: "aud-empty-array", signer: signerHS256, header: hs, payload: bodyWithout(`"aud"`, `"aud":[]`),
			want: verify.ErrWrongAudience, wantJWT: jwt.ErrTokenRequiredClaimMissing},
		{name: "aud-empty-string", signer: signerHS256, header: hs, payload: bodyWithout(`"aud"`, `"aud":""`),
			want: verify.ErrWrongAudience, wantJWT: jwt.ErrTokenRequiredClaimMissing},
		{name: "aud-array-with-number", signer: signerHS256, header: hs, payload: bodyWithout(`"aud"`, `"aud":["`+aud+`",1]`),
			want: verify.ErrMalformed, wantJWT: jwt.ErrInvalidType},
		{name: "aud-array-with-null", signer: signerHS256, header: hs, payload: bodyWithout(`"aud"`, `"aud":["`+aud+`",null]`),
			want: verify.ErrMalformed, wantJWT: jwt.ErrInvalidType},
		{name: "aud-number", signer: signerHS256, header: hs, payload: bodyWithout(`"aud"`, `"aud":1`),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenRequiredClaimMissing}, // golang-jwt reads a number aud as none
		{name: "aud-object", signer: signerHS256, header: hs, payload: bodyWithout(`"aud"`, `"aud":{"`+aud+`":1}`),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenRequiredClaimMissing},
		{name: "aud-absent", signer: signerHS256, header: hs, payload: bodyWithout(`"aud"`),
			want: verify.ErrMissingClaim, wantJWT: jwt.ErrTokenRequiredClaimMissing},
		{name: "aud-case-changed", signer: signerHS256, header: hs, payload: bodyWithout(`"aud"`, `"aud":"API://orders"`),
			want: verify.ErrWrongAudience, wantJWT: jwt.ErrTokenInvalidAudience},
		{name: "aud-unicode-escape", signer: signerHS256, header: hs, payload: bodyWithout(`"aud"`, `"aud":"\u0061pi://orders"`)},

		// iss.
		{name: "iss-without-trailing-slash", signer: signerHS256, header: hs, payload: bodyWithout(`"iss"`, `"iss":"https://a.example.com"`),
			want: verify.ErrWrongIssuer, wantJWT: jwt.ErrTokenInvalidIssuer},
		{name: "iss-case-changed", signer: signerHS256, header: hs, payload: bodyWithout(`"iss"`, `"iss":"https://A.example.com/"`),
			want: verify.ErrWrongIssuer, wantJWT: jwt.ErrTokenInvalidIssuer},
		{name: "iss-unicode-escape", signer: signerHS256, header: hs, payload: bodyWithout(`"iss"`, `"iss":"\u0068ttps://a.example.com/"`)},
		{name: "iss-escaped-slashes", signer: signerHS256, header: hs, payload: bodyWithout(`"iss"`, `"iss":"https:\/\/a.example.com\/"`)},
		{name: "iss-number", signer: signerHS256, header: hs, payload: bodyWithout(`"iss"`, `"iss":1`),
			want: verify.ErrMalformed, wantJWT: jwt.ErrInvalidType},
		{name: "iss-absent", signer: signerHS256, header: hs, payload: bodyWithout(`"iss"`),
			want: verify.ErrMissingClaim, wantJWT: jwt.ErrTokenRequiredClaimMissing},
		{name: "sub-number", signer: signerHS256, header: hs, payload: bodyWithout(`"sub"`, `"sub":7`),
			want: verify.ErrMalformed}, // golang-jwt reads sub only WithSubject

		// Duplicated names: golang-jwt (encoding/json) keeps the last.
		{name: "dup-exp-live-last", signer: signerHS256, header: hs, payload: obj(mIss, mSub, mAud, `"exp":`+at(-3600), `"exp":`+at(3600)),
			want: verify.ErrMalformed},
		{name: "dup-exp-expired-last", signer: signerHS256, header: hs, payload: obj(mIss, mSub, mAud, `"exp":`+at(3600), `"exp":`+at(-3600)),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenExpired},
		{name: "dup-iss", signer: signerHS256, header: hs, payload: obj(`"iss":"https://evil.example/"`, mIss, mSub, mAud, mExp),
			want: verify.ErrMalformed},
		{name: "dup-escaped-name", signer: signerHS256, header: hs, payload: body(`"\u0065xp":` + at(-3600)),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenExpired},
		{name: "dup-name-in-other-case", signer: signerHS256, header: hs, payload: body(`"SUB":"bob"`),
			want: verify.ErrMalformed},
		{name: "dup-alg-in-header", signer: signerHS256, header: `{"alg":"none","alg":"HS256","kid":"k-HS256"}`, payload: body(),
			want: verify.ErrMalformed},

		// kid.
		{name: "kid-absent", signer: signerES256, header: hdr("ES256", ""), payload: body()},
		{name: "kid-empty", signer: signerES256, header: hdr("ES256", "", `"kid":""`), payload: body()},
		{name: "kid-twice", signer: signerHS256, header: `{"alg":"HS256","kid":"nope","kid":"k-HS256"}`, payload: body(),
			want: verify.ErrMalformed},
		{name: "kid-number", signer: signerHS256, header: `{"alg":"HS256","kid":1}`, payload: body(),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenUnverifiable},
		{name: "kid-null", signer: signerHS256, header: `{"alg":"HS256","kid":null}`, payload: body(),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenUnverifiable},
		{name: "kid-unknown", signer: signerHS256, header: hdr("HS256", "k-nope"), payload: body(),
			want: verify.ErrUnknownKid, wantJWT: jwt.ErrTokenUnverifiable},
		{name: "kid-of-another-key-type", signer: signerHS256, header: hdr("HS256", "k-RS256"), payload: body(),
			want: verify.ErrAlgNotAllowed, wantJWT: jwt.ErrTokenSignatureInvalid},

		// alg.
		{name: "alg-lower-case", signer: signerHS256, header: hdr("hs256", "k-HS256"), payload: body(),
			want: verify.ErrAlgNotAllowed, wantJWT: jwt.ErrTokenUnverifiable},
		{name: "alg-none", signer: signerHS256, header: hdr("none", ""), payload: body(),
			want: verify.ErrAlgNotAllowed, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "alg-NONE", signer: signerHS256, header: hdr("NONE", ""), payload: body(),
			want: verify.ErrAlgNotAllowed, wantJWT: jwt.ErrTokenUnverifiable},
		{name: "alg-absent", signer: signerHS256, header: `{"kid":"k-HS256"}`, payload: body(),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenUnverifiable},
		{name: "alg-number", signer: signerHS256, header: `{"alg":256,"kid":"k-HS256"}`, payload: body(),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenUnverifiable},
		{name: "alg-confusion-hs256-rsa-pem-kid", signer: signerConfusion, header: hdr("HS256", "k-RS256"), payload: body(),
			want: verify.ErrAlgNotAllowed, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "alg-confusion-hs256-rsa-pem-kidless", signer: signerConfusion, header: hdr("HS256", ""), payload: body(),
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "alg-not-in-allowlist", cfg: 2, signer: signerRS256, header: hdr("RS256", "k-RS256"), payload: body(),
			want: verify.ErrAlgNotAllowed, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "alg-hmac-not-allowed", cfg: 1, signer: signerHS256, header: hs, payload: body(),
			want: verify.ErrAlgNotAllowed, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "alg-says-rs256-signed-es256", signer: signerES256, header: hdr("RS256", ""), payload: body(),
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},

		// typ, cty, crit, b64.
		{name: "typ-jwt", signer: signerHS256, header: hdr("HS256", "k-HS256", `"typ":"JWT"`), payload: body()},
		{name: "typ-at-jwt", signer: signerHS256, header: hdr("HS256", "k-HS256", `"typ":"at+jwt"`), payload: body()},
		{name: "typ-logout", signer: signerHS256, header: hdr("HS256", "k-HS256", `"typ":"logout+jwt"`), payload: body(),
			want: verify.ErrWrongType},
		{name: "typ-number", signer: signerHS256, header: hdr("HS256", "k-HS256", `"typ":1`), payload: body(),
			want: verify.ErrMalformed},
		{name: "cty-jwt", signer: signerHS256, header: hdr("HS256", "k-HS256", `"cty":"JWT"`), payload: body()},
		{name: "events-claim", signer: signerHS256, header: hs, payload: body(`"events":{}`),
			want: verify.ErrWrongType},
		{name: "crit-b64", signer: signerHS256, header: hdr("HS256", "k-HS256", `"b64":false`, `"crit":["b64"]`), payload: body(),
			want: verify.ErrUnsupportedCrit},
		{name: "crit-empty", signer: signerHS256, header: hdr("HS256", "k-HS256", `"crit":[]`), payload: body(),
			want: verify.ErrUnsupportedCrit},
		{name: "crit-exp", signer: signerHS256, header: hdr("HS256", "k-HS256", `"crit":["exp"]`, `"exp":1`), payload: body(),
			want: verify.ErrUnsupportedCrit},
		{name: "crit-string", signer: signerHS256, header: hdr("HS256", "k-HS256", `"crit":"b64"`), payload: body(),
			want: verify.ErrUnsupportedCrit},
		{name: "b64-false-without-crit", signer: signerHS256, header: hdr("HS256", "k-HS256", `"b64":false`), payload: body()},

		// Keys a header embeds or points at are never used.
		{name: "jwk-embedded-untrusted", signer: signerUntrusted, header: hdr("ES256", "", `"jwk":`+untrustedJWK()), payload: body(),
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "jwk-embedded-with-kid", signer: signerUntrusted, header: hdr("ES256", "k-ES256", `"jwk":`+untrustedJWK()), payload: body(),
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "jku-untrusted", signer: signerUntrusted, header: hdr("ES256", "", `"jku":"https://evil.example/jwks"`), payload: body(),
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "x5u-untrusted", signer: signerUntrusted, header: hdr("ES256", "", `"x5u":"https://evil.example/cert"`), payload: body(),
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "x5c-untrusted", signer: signerUntrusted, header: hdr("ES256", "", `"x5c":["MIIB"]`), payload: body(),
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "jku-ignored-trusted-key", signer: signerES256, header: hdr("ES256", "k-ES256", `"jku":"https://evil.example/jwks"`), payload: body()},

		// Two issuers, each with its own keys: issB's k-ES256 is another
		// key than issA's (ec256-b, what signerUntrusted signs with).
		{name: "two-issuers-a", cfg: 3, signer: signerES256, header: hdr("ES256", "k-ES256"), payload: body()},
		{name: "two-issuers-b", cfg: 3, signer: signerUntrusted, header: hdr("ES256", "k-ES256"), payload: bodyWithout(`"iss"`, `"iss":"`+issB+`"`)},
		{name: "two-issuers-b-kidless", cfg: 3, signer: signerUntrusted, header: hdr("ES256", ""), payload: bodyWithout(`"iss"`, `"iss":"`+issB+`"`)},
		{name: "two-issuers-b-signed-by-a-key", cfg: 3, signer: signerES256, header: hdr("ES256", "k-ES256"), payload: bodyWithout(`"iss"`, `"iss":"`+issB+`"`),
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "two-issuers-b-kidless-signed-by-a-key", cfg: 3, signer: signerES256, header: hdr("ES256", ""), payload: bodyWithout(`"iss"`, `"iss":"`+issB+`"`),
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "two-issuers-b-kid-of-a", cfg: 3, signer: signerHS256, header: hs, payload: bodyWithout(`"iss"`, `"iss":"`+issB+`"`),
			want: verify.ErrUnknownKid, wantJWT: jwt.ErrTokenUnverifiable},
		{name: "two-issuers-a-signed-by-b-key", cfg: 3, signer: signerUntrusted, header: hdr("ES256", "k-ES256"), payload: body(),
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "two-issuers-unknown", cfg: 3, signer: signerES256, header: hdr("ES256", "k-ES256"), payload: bodyWithout(`"iss"`, `"iss":"https://c.example.com/"`),
			want: verify.ErrUnknownIssuer, wantJWT: errNoIssuer},
		{name: "two-issuers-iss-twice", cfg: 3, signer: signerUntrusted, header: hdr("ES256", "k-ES256"), payload: bodyWithout(`"iss"`, mIss, `"iss":"`+issB+`"`),
			want: verify.ErrMalformed}, // golang-jwt reads the last, issB

		// Encoding.
		{name: "padding-header", signer: signerHS256, header: hs, payload: body(), mut: mutPadHeader,
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "padding-claims", signer: signerHS256, header: hs, payload: body(`"x":12`), mut: mutPadClaims,
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "padding-signature", signer: signerHS256, header: hs, payload: body(), mut: mutPadSig,
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "standard-alphabet", signer: signerHS256, header: hs, payload: body(`"x":"???>>>"`), mut: mutStdAlphabet,
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "trailing-bits-header", signer: signerHS256, header: hs, payload: body(), mut: mutBitsHeader,
			want: verify.ErrMalformed},
		{name: "trailing-bits-claims", signer: signerHS256, header: hs, payload: body(`"x":12`), mut: mutBitsClaims,
			want: verify.ErrMalformed},
		{name: "trailing-bits-signature", signer: signerRS256, header: hdr("RS256", "k-RS256"), payload: body(), mut: mutBitsSig,
			want: verify.ErrMalformed},
		{name: "line-feed-in-claims", signer: signerHS256, header: hs, payload: body(), mut: mutNewline,
			want: verify.ErrMalformed},
		{name: "fourth-segment", signer: signerHS256, header: hs, payload: body(), mut: mutFourth,
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "extra-dot", signer: signerHS256, header: hs, payload: body(), mut: mutExtraDot,
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "signature-zero-byte-first", signer: signerRS256, header: hdr("RS256", "k-RS256"), payload: body(), mut: mutSigZeroPrefix,
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "signature-zero-byte-first-es256", signer: signerES256, header: hdr("ES256", "k-ES256"), payload: body(), mut: mutSigZeroPrefix,
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		// s + N fits in 256 bytes for this claims set's signature (about a
		// third do: N starts with 0xaa); PSS signs with a random salt, so
		// its s + N is left to the fuzzer.
		{name: "signature-rsa-plus-modulus", signer: signerRS256, header: hdr("RS256", "k-RS256"), payload: body(`"x":0`), mut: mutSigMalleate,
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "signature-es256-high-s", signer: signerES256, header: hdr("ES256", "k-ES256"), payload: body(), mut: mutSigMalleate},
		{name: "signature-eddsa-s-plus-l", signer: signerEdDSA, header: hdr("EdDSA", "k-EdDSA"), payload: body(), mut: mutSigMalleate,
			want: verify.ErrBadSignature, wantJWT: jwt.ErrTokenSignatureInvalid},
		{name: "leading-space", signer: signerHS256, header: hs, payload: body(), mut: mutSpace,
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "segment-over-max-token-bytes", signer: signerHS256, header: hs, payload: body(`"x":"` + long + `"`),
			want: verify.ErrTokenTooLarge},
		{name: "long-segment-within-bound", signer: signerHS256, header: hs, payload: body(`"x":"` + long[:10000] + `"`)},

		// Header and claims that are not objects, or not strict JSON.
		{name: "header-array", signer: signerHS256, header: `["HS256"]`, payload: body(),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "header-string", signer: signerHS256, header: `"HS256"`, payload: body(),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "header-number", signer: signerHS256, header: `256`, payload: body(),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "header-null", signer: signerHS256, header: `null`, payload: body(),
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenUnverifiable},
		{name: "claims-array", signer: signerHS256, header: hs, payload: `[` + body() + `]`,
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "claims-null", signer: signerHS256, header: hs, payload: `null`,
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenRequiredClaimMissing},
		{name: "claims-trailing-garbage", signer: signerHS256, header: hs, payload: body() + `x`,
			want: verify.ErrMalformed, wantJWT: jwt.ErrTokenMalformed},
		{name: "claims-invalid-utf8", signer: signerHS256, header: hs, payload: bodyWithout(`"sub"`, "\"sub\":\"al\xffice\""),
			want: verify.ErrMalformed},
		{name: "claims-lone-surrogate", signer: signerHS256, header: hs, payload: bodyWithout(`"sub"`, `"sub":"al\ud800ice"`)},
		{name: "claims-nested-65-deep", signer: signerHS256, header: hs, payload: body(`"x":` + deep),
			want: verify.ErrMalformed},
		{name: "header-number-beyond-float64", signer: signerHS256, header: hdr("HS256", "k-HS256", `"x":1e400`), payload: body(),
			wantJWT: jwt.ErrTokenMalformed},
		{name: "header-name-in-other-case", signer: signerHS256, header: hdr("HS256", "k-HS256", `"KID":"k-nope"`), payload: body(),
			want: verify.ErrMalformed},
		{name: "header-invalid-utf8", signer: signerHS256, header: hdr("HS256", "k-HS256", "\"x\":\"\xff\""), payload: body(),
			want: verify.ErrMalformed},
		{name: "claims-number-beyond-float64", signer: signerHS256, header: hs, payload: body(`"x":1e400`),
			wantJWT: jwt.ErrTokenMalformed},
	}
}

// TestVerifyDifferentialCases verifies each crafted token with the verifier
// and with golang-jwt under the case's configuration: each answers as the
// row says, and the differential's property holds.
func TestVerifyDifferentialCases(t *testing.T) {
	h := diffSetup(t)
	for _, tt := range diffCases() {
		t.Run(tt.name, func(t *testing.T) {
			token := diffToken(t, int(tt.signer), tt.header, tt.payload, tt.mut)
			if tt.mut != 0 && token == diffToken(t, int(tt.signer), tt.header, tt.payload, 0) && (tt.signer == signerHS256 || tt.signer == signerRS256) {
				t.Fatalf("mutation %#x changed nothing", tt.mut)
			}
			_, err, _, gerr := h.run(int(tt.cfg), token)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("Verify() = %v, want %v", err, tt.want)
			}
			if tt.wantJWT != errJWTEither && (!errors.Is(gerr, tt.wantJWT) || (tt.wantJWT == nil) != (gerr == nil)) {
				t.Errorf("golang-jwt Parse() = %v, want %v", gerr, tt.wantJWT)
			}
			h.check(t, int(tt.cfg), token)
		})
	}
}
