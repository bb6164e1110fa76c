package verify

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jwksverify/jwksverify/internal/asciifold"
)

// This file holds the checks a relying party makes of an ID token (OIDC
// Core 3.1.3.7, 3.2.2.11, 3.3.2.11) and the rules that keep token kinds
// apart (RFC 8725 §3.11–3.12, OIDC Back-Channel Logout §4.1).
//
// An ID token runs the access token's checks (size, structure, header,
// crit, issuer, alg, key, signature, exp, nbf) with these differences: its
// issuer must accept ID tokens ([Issuer.IDToken]); aud is held to the
// issuer's client IDs, never its Audiences; the issuer's Type and
// RequiredClaims are access-token settings and do not apply; sub, exp and
// iat are required; iat must not be ahead of now by more than the leeway;
// azp is held to the issuer's [AZPMode]. These depend on the token alone,
// and the token cache keeps their verdict apart from the access-token
// verdict of the same token (tokenEntry.kind). The checks of the caller's
// inputs ([IDTokenChecks]: nonce, at_hash, c_hash, auth_time, acr) depend
// on the request: they run on every call, a cache hit too, so that no set
// of inputs is ever answered with another's verdict.

// AZPMode says when an ID token's azp claim is checked ([IDTokenPolicy]).
type AZPMode string

// The azp modes.
const (
	// AZPWhenMultipleAudiences: an azp, when present, must be one of the
	// client IDs, and it must be present when aud holds several values
	// (OIDC Core 3.1.3.7 items 4 and 5). The zero mode means this one.
	AZPWhenMultipleAudiences AZPMode = "when_multiple_audiences"
	// AZPAlways: azp must be present and one of the client IDs.
	AZPAlways AZPMode = "always"
	// AZPOff: azp is not checked at all. For issuers whose azp names
	// another client than aud (Google's Android sign-in: azp is the
	// Android client, aud the web client).
	AZPOff AZPMode = "off"
)

// IDTokenPolicy is what an issuer accepts as ID tokens. The zero value
// accepts none: such an issuer refuses every ID token as wrong_type.
type IDTokenPolicy struct {
	// ClientIDs are the relying party's client IDs at this issuer: an ID
	// token's aud must hold one of them. Empty means the issuer's ID
	// tokens are refused (wrong_type).
	ClientIDs []string
	// AZP says when azp is checked. Empty means
	// [AZPWhenMultipleAudiences].
	AZP AZPMode
}

// IDTokenChecks are the values a relying party holds from its own
// authentication request and token response, checked against the ID
// token's claims. The zero value checks none of them. Each one that is
// given makes its claim required: a token without it is missing_claim.
type IDTokenChecks struct {
	// Nonce is the nonce the RP sent in its authentication request: the
	// token's nonce must equal it (wrong_nonce). Empty means not checked.
	Nonce string
	// AccessToken is the access token issued with the ID token: at_hash
	// must be the left half of its hash (wrong_hash). Empty means not
	// checked.
	AccessToken string
	// Code is the authorization code issued with the ID token (hybrid
	// flow): c_hash must be the left half of its hash (wrong_hash). Empty
	// means not checked.
	Code string
	// MaxAge is the max_age of the authentication request: auth_time must
	// be no older than it, plus the issuer's leeway (auth_too_old). It is
	// checked only when HasMaxAge is set, so that max_age=0 can be asked.
	MaxAge    time.Duration
	HasMaxAge bool
	// ACRValues are the acr_values of the authentication request: the
	// token's acr must be one of them (wrong_acr). Empty means not checked.
	ACRValues []string
}

// CheckAZPMode reports whether m is an [AZPMode] ("" included: the
// default), an error naming the modes if not.
func CheckAZPMode(m AZPMode) error {
	switch m {
	case "", AZPWhenMultipleAudiences, AZPAlways, AZPOff:
		return nil
	}
	return fmt.Errorf("azp mode %q is none of %s, %s, %s", string(m), AZPOff, AZPWhenMultipleAudiences, AZPAlways)
}

// VerifyIDToken checks an ID token for a relying party: the checks of
// [Verifier.Verify] with the ID token's differences (see [IDTokenPolicy])
// and those of in. It is VerifyIDTokenAt with the verifier's clock. An
// opaque token is never an ID token (malformed). It is safe for
// concurrent use and blocks as Verify does.
func (v *Verifier) VerifyIDToken(ctx context.Context, token string, in IDTokenChecks) (*Result, error) {
	return v.VerifyIDTokenAt(ctx, token, v.now(), in)
}

// VerifyIDTokenAt is [Verifier.VerifyIDToken] judged at the instant now
// (see [Verifier.VerifyAt]).
func (v *Verifier) VerifyIDTokenAt(ctx context.Context, token string, now time.Time, in IDTokenChecks) (*Result, error) {
	if v.tracer != nil {
		return v.verifyTraced(ctx, token, now, nil, &in)
	}
	res, _, err := v.verifyCached(ctx, token, now, nil, &in)
	return res, err
}

// ExplainIDTokenAt is [Verifier.ExplainAt] for an ID token: the steps
// include the ID token's own ("azp", "iat", "nonce", "at_hash", "c_hash",
// "auth_time", "acr"). It neither reads nor fills the token cache.
func (v *Verifier) ExplainIDTokenAt(ctx context.Context, token string, now time.Time, in IDTokenChecks) ([]Step, *Result, error) {
	tr := &trace{}
	res, _, _, err := v.verify(ctx, token, now, tr, nil, &in)
	return tr.steps, res, err
}

// tokenKind is what a token is asked to be. The token cache keeps one
// kind's verdicts apart from another's.
type tokenKind uint8

const (
	kindAccess tokenKind = iota
	kindID
)

// kindOf is the kind of a verification with ID-token inputs in (nil: an
// access token).
func kindOf(in *IDTokenChecks) tokenKind {
	if in != nil {
		return kindID
	}
	return kindAccess
}

func (k tokenKind) String() string {
	if k == kindID {
		return "id_token"
	}
	return "access_token"
}

// foreignTypes are the typ values of tokens that are never an access token
// or an ID token (normalized: lower case, without "application/").
var foreignTypes = [...]string{"logout+jwt", "secevent+jwt", "dpop+jwt", "token-introspection+jwt"}

// typeAT is the typ of an RFC 9068 access token, never an ID token.
const typeAT = "at+jwt"

// kindError is the refusal of a token with header h and claims c asked
// to be of kind k, or nil when nothing in them says it is another kind.
func kindError(h *header, c *claims, k tokenKind) error {
	if c.events {
		return fmt.Errorf("%w: a token with an events claim (a logout token or a SET) is never an %s", ErrWrongType, k)
	}
	if !h.hasTyp {
		return nil
	}
	typ := mediaType(h.typ)
	for _, t := range foreignTypes {
		if typeMayBe(t, typ) {
			return fmt.Errorf("%w: typ %s is never an %s", ErrWrongType, quote(h.typ), k)
		}
	}
	if k == kindID && typeMatches(typeAT, typ) {
		return fmt.Errorf("%w: typ %s is an access token, never an ID token", ErrWrongType, quote(h.typ))
	}
	return nil
}

// typeMayBe reports whether a reader may take typ for the normalized type
// want: it matches (typeMatches), or only Unicode case folding makes it
// match ("ſecevent+jwt", "token-introspection+jw\u212at"), as
// strings.EqualFold or Java's equalsIgnoreCase do. The refusals of
// another kind take both readings: a typ some reader takes for a SET is
// no access token.
func typeMayBe(want, typ string) bool {
	return typeMatches(want, typ) || asciifold.Disagree(want, withoutApplication(typ))
}

// mediaType is typ read as a media type is for the kind check: without
// its parameters (from the first ';') and the white space around the type
// (RFC 9110 §8.3.1), so that "application/dpop+jwt; charset=utf-8" or
// "logout+jwt " still names its kind. Only the refusals read it: the
// issuer's own Type and a logout token's typ are still matched exactly.
func mediaType(typ string) string {
	if i := strings.IndexByte(typ, ';'); i >= 0 {
		typ = typ[:i]
	}
	return strings.Trim(typ, " \t")
}

// checkKind is the step "kind", right after the signature: nothing in the
// token says it is of another kind than k.
func checkKind(h *header, c *claims, k tokenKind, tr *trace) error {
	if err := kindError(h, c, k); err != nil {
		return tr.fail("kind", err)
	}
	if tr != nil {
		tr.add("kind", true, fmt.Sprintf("may be an %s: no events claim, typ %s", k, quote(h.typ)))
	}
	return nil
}

// idTokenError is the refusal of an ID token by an issuer without client
// IDs (step 5 of an ID token), or nil.
func (is *issuer) idTokenError() error {
	if len(is.cfg.IDToken.ClientIDs) == 0 {
		return fmt.Errorf("%w: issuer %s accepts no ID tokens (no id_token.client_ids)", ErrWrongType, quote(is.cfg.Issuer))
	}
	return nil
}

// checkIDAud is step 11 of an ID token: aud holds one of the client IDs.
func (is *issuer) checkIDAud(c *claims, tr *trace) error {
	ids := is.cfg.IDToken.ClientIDs
	if !c.has(clAud) {
		return tr.fail("aud", fmt.Errorf("%w: aud is required", ErrMissingClaim))
	}
	if !c.audHas(ids) {
		return tr.fail("aud", fmt.Errorf("%w: aud %s has none of the client IDs", ErrWrongAudience, quoteList(c.audList())))
	}
	if tr != nil {
		tr.add("aud", true, fmt.Sprintf("aud %s has one of the client IDs %q", quoteList(c.audList()), ids))
	}
	return nil
}

// idRequired are the claims an ID token must hold besides iss and aud
// (OIDC Core 2), which earlier steps require.
const idRequired = clSub | clExp | clIat

// checkIDClaims is step 13 of an ID token: sub, exp and iat are present,
// iat is not ahead of now by more than the leeway, and azp follows the
// issuer's mode. ps is the claims set's JSON.
func (is *issuer) checkIDClaims(c *claims, ps string, now time.Time, tr *trace) error {
	if missing := idRequired &^ c.present; missing != 0 {
		for _, n := range [...]string{"sub", "exp", "iat"} {
			if missing&registeredBit(n) != 0 {
				return tr.fail("claims", fmt.Errorf("%w: %s is required in an ID token", ErrMissingClaim, n))
			}
		}
	}
	if c.sub == "" {
		// OIDC Core 2: sub identifies the end-user at the issuer; an empty
		// one names no one, and a relying party keying accounts by it would
		// give every such token the same account.
		return tr.fail("claims", fmt.Errorf("%w: sub is empty in an ID token", ErrMissingClaim))
	}
	if tr != nil {
		tr.add("claims", true, `required ["sub" "exp" "iat"] present, sub not empty`)
	}
	if c.iat.After(now.Add(is.leeway)) {
		return tr.fail("iat", fmt.Errorf("%w: iat %s, now %s, leeway %s", ErrNotYetValid,
			c.iat.Format(time.RFC3339), now.UTC().Format(time.RFC3339), is.leeway))
	}
	if tr != nil {
		tr.add("iat", true, fmt.Sprintf("iat %s, now %s, leeway %s", c.iat.Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano), is.leeway))
	}
	return is.checkAZP(c, ps, tr)
}

// checkAZP holds the azp claim to the issuer's mode.
func (is *issuer) checkAZP(c *claims, ps string, tr *trace) error {
	mode := is.cfg.IDToken.AZP
	if mode == AZPOff {
		if tr != nil {
			tr.add("azp", true, "not checked (azp: off)")
		}
		return nil
	}
	raw, present := memberValue(ps, "azp")
	multi := !c.audOne && len(c.aud) > 1
	switch {
	case !present && mode == AZPAlways:
		return tr.fail("azp", fmt.Errorf("%w: azp is required (azp: always)", ErrWrongAZP))
	case !present && multi:
		return tr.fail("azp", fmt.Errorf("%w: azp is required when aud has several values", ErrWrongAZP))
	case !present:
		if tr != nil {
			tr.add("azp", true, "absent, aud has one value")
		}
		return nil
	}
	azp, ok := jsonString(raw)
	if !ok || !slices.Contains(is.cfg.IDToken.ClientIDs, azp) {
		return tr.fail("azp", fmt.Errorf("%w: azp %s is none of the client IDs", ErrWrongAZP, quote(azp)))
	}
	if tr != nil {
		tr.add("azp", true, fmt.Sprintf("azp %s is a client ID", quote(azp)))
	}
	return nil
}

// The claims the input checks read, in the order of idInputs' out.
var idInputClaims = [...]string{"nonce", "at_hash", "c_hash", "auth_time", "acr"}

// checkIDInputs holds the verified ID token res of issuer is to the
// caller's inputs in at now. It reads res only, so that it runs the same
// on a token-cache hit. Each check given records a step.
func checkIDInputs(res *Result, is *issuer, in *IDTokenChecks, now time.Time, tr *trace) error {
	var vals [len(idInputClaims)]string
	if in.Nonce != "" || in.AccessToken != "" || in.Code != "" || in.HasMaxAge || len(in.ACRValues) > 0 {
		res.ClaimValues(idInputClaims[:], vals[:])
	}
	if in.Nonce != "" {
		if vals[0] == "" {
			return tr.fail("nonce", fmt.Errorf("%w: nonce was given and the token has none", ErrMissingClaim))
		}
		got, _ := jsonString(vals[0])
		if subtle.ConstantTimeCompare([]byte(got), []byte(in.Nonce)) != 1 {
			return tr.fail("nonce", fmt.Errorf("%w: the token's nonce is not the one given", ErrWrongNonce))
		}
		if tr != nil {
			tr.add("nonce", true, "equals the one given")
		}
	}
	if in.AccessToken != "" {
		if err := checkHash("at_hash", vals[1], in.AccessToken, res.Alg, tr); err != nil {
			return err
		}
	}
	if in.Code != "" {
		if err := checkHash("c_hash", vals[2], in.Code, res.Alg, tr); err != nil {
			return err
		}
	}
	if in.HasMaxAge {
		if err := checkAuthTime(vals[3], in.MaxAge, is.leeway, now, tr); err != nil {
			return err
		}
	}
	if len(in.ACRValues) > 0 {
		if vals[4] == "" {
			return tr.fail("acr", fmt.Errorf("%w: acr_values were given and the token has no acr", ErrMissingClaim))
		}
		acr, ok := jsonString(vals[4])
		if !ok || !slices.Contains(in.ACRValues, acr) {
			return tr.fail("acr", fmt.Errorf("%w: acr %s is none of the acr_values %q", ErrWrongACR, quote(acr), in.ACRValues))
		}
		if tr != nil {
			tr.add("acr", true, fmt.Sprintf("acr %s is one of %q", quote(acr), in.ACRValues))
		}
	}
	return nil
}

// checkHash holds the claim (at_hash or c_hash) whose JSON text is raw
// ("" when absent) to value, signed with alg.
func checkHash(claim, raw, value, alg string, tr *trace) error {
	if raw == "" {
		return tr.fail(claim, fmt.Errorf("%w: %s is required when its value is given", ErrMissingClaim, claim))
	}
	got, ok := jsonString(raw)
	want, name := HalfHash(alg, value)
	if !ok || name == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return tr.fail(claim, fmt.Errorf("%w: %s is not the left half of the %s of the value given", ErrWrongHash, claim, cmp.Or(name, "hash")))
	}
	if tr != nil {
		tr.add(claim, true, fmt.Sprintf("left half of %s (alg %s) matches", name, alg))
	}
	return nil
}

// checkAuthTime holds auth_time (JSON text raw, "" when absent) to maxAge
// plus leeway at now. An auth_time ahead of now by more than the leeway is
// not_yet_valid, as an iat is: it would pass every max_age (an IdP writing
// milliseconds). The bound is compared without adding maxAge and leeway,
// which overflows near time.Duration's range.
func checkAuthTime(raw string, maxAge, leeway time.Duration, now time.Time, tr *trace) error {
	if raw == "" {
		return tr.fail("auth_time", fmt.Errorf("%w: max_age was given and the token has no auth_time", ErrMissingClaim))
	}
	at, err := numericDate(raw)
	if err != nil {
		return tr.fail("auth_time", fmt.Errorf("%w: auth_time: %w", ErrMalformed, err))
	}
	if at.After(now.Add(leeway)) {
		return tr.fail("auth_time", fmt.Errorf("%w: auth_time %s is ahead of now %s, leeway %s", ErrNotYetValid,
			at.Format(time.RFC3339), now.UTC().Format(time.RFC3339), leeway))
	}
	maxAge = max(maxAge, 0)
	if age := now.Sub(at); age > maxAge && age-maxAge > leeway {
		return tr.fail("auth_time", fmt.Errorf("%w: auth_time %s is older than max_age %s plus leeway %s",
			ErrAuthTooOld, at.Format(time.RFC3339), maxAge, leeway))
	}
	if tr != nil {
		tr.add("auth_time", true, fmt.Sprintf("auth_time %s, max_age %s, leeway %s", at.Format(time.RFC3339), maxAge, leeway))
	}
	return nil
}

// HalfHash is the at_hash or c_hash of value for a token signed with alg
// (OIDC Core 3.1.3.6, 3.3.2.11): the base64url (unpadded) left half of its
// hash with the SHA-2 size of alg — SHA-256 for *256, SHA-384 for *384,
// SHA-512 for *512 and for EdDSA (Ed25519 uses SHA-512). It also returns
// the hash's name, or "", "" for an alg it does not know. It is safe for
// concurrent use.
func HalfHash(alg, value string) (half, hash string) {
	var sum []byte
	switch {
	case alg == "EdDSA" || strings.HasSuffix(alg, "512"):
		s := sha512.Sum512([]byte(value))
		sum, hash = s[:], "SHA-512"
	case strings.HasSuffix(alg, "384"):
		s := sha512.Sum384([]byte(value))
		sum, hash = s[:], "SHA-384"
	case strings.HasSuffix(alg, "256"):
		s := sha256.Sum256([]byte(value))
		sum, hash = s[:], "SHA-256"
	default:
		return "", ""
	}
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2]), hash
}

// memberValue returns the JSON text of the top-level member name of the
// validated object s, and whether it is present. It does not allocate.
func memberValue(s, name string) (string, bool) {
	var spans [1]claimSpan
	names := [1]string{name}
	if scanClaims(s, names[:], spans[:]) == 0 {
		return "", false
	}
	return s[spans[0].start:spans[0].end], true
}

// jsonString decodes the validated JSON text v when it is a string.
func jsonString(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	return unescape(v[1 : len(v)-1]), true
}

// issuerNamed returns the verifier's issuer whose Issuer is name, or nil.
func (v *Verifier) issuerNamed(name string) *issuer {
	for _, is := range v.issuers {
		if is.cfg.Issuer == name {
			return is
		}
	}
	return nil
}
