package verify

import (
	"cmp"
	"crypto"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/asciifold"
)

// tenantPlaceholder is the Microsoft Entra multi-tenant issuer placeholder.
const tenantPlaceholder = "{tenantid}"

// useJWTSVID is the key use of a SPIFFE bundle's JWT authorities (the same
// word as jwks.UseJWTSVID, which the bundle parser sets).
const useJWTSVID = "jwt-svid"

// spiffeScheme starts every SPIFFE ID.
const spiffeScheme = "spiffe://"

// noExpTTL bounds how long a verified token without exp stays in the token
// cache.
const noExpTTL = 5 * time.Minute

// algSpec describes one supported JWS algorithm and the key it needs.
type algSpec struct {
	name   string
	bit    uint16
	method jwt.SigningMethod
	kty    string  // required JWK kty
	crv    string  // required curve for EC and OKP, else ""
	es     *esSpec // ES* only: verified as crypto.go says, not by method
	rs     *rsSpec // RS* and PS* only: verified as crypto.go says, not by method
}

// algs lists the supported algorithms; index i has bit 1<<i.
var algs = [...]algSpec{
	{"HS256", 1 << 0, jwt.SigningMethodHS256, "oct", "", nil, nil},
	{"HS384", 1 << 1, jwt.SigningMethodHS384, "oct", "", nil, nil},
	{"HS512", 1 << 2, jwt.SigningMethodHS512, "oct", "", nil, nil},
	{"RS256", 1 << 3, jwt.SigningMethodRS256, "RSA", "", nil, &rsSpec{crypto.SHA256, false}},
	{"RS384", 1 << 4, jwt.SigningMethodRS384, "RSA", "", nil, &rsSpec{crypto.SHA384, false}},
	{"RS512", 1 << 5, jwt.SigningMethodRS512, "RSA", "", nil, &rsSpec{crypto.SHA512, false}},
	{"PS256", 1 << 6, jwt.SigningMethodPS256, "RSA", "", nil, &rsSpec{crypto.SHA256, true}},
	{"PS384", 1 << 7, jwt.SigningMethodPS384, "RSA", "", nil, &rsSpec{crypto.SHA384, true}},
	{"PS512", 1 << 8, jwt.SigningMethodPS512, "RSA", "", nil, &rsSpec{crypto.SHA512, true}},
	{"ES256", 1 << 9, jwt.SigningMethodES256, "EC", "P-256", &esSpec{crypto.SHA256, 32}, nil},
	{"ES384", 1 << 10, jwt.SigningMethodES384, "EC", "P-384", &esSpec{crypto.SHA384, 48}, nil},
	{"ES512", 1 << 11, jwt.SigningMethodES512, "EC", "P-521", &esSpec{crypto.SHA512, 66}, nil},
	{"EdDSA", 1 << 12, jwt.SigningMethodEdDSA, "OKP", "Ed25519", nil, nil},
}

const (
	hmacAlgs       uint16 = 1<<0 | 1<<1 | 1<<2
	asymmetricAlgs uint16 = (1<<13 - 1) &^ hmacAlgs
	// svidAlgs are the algorithms of the JWT-SVID standard's §2.1 table
	// (RS*, PS*, ES*): a validator MUST reject any other alg.
	svidAlgs uint16 = asymmetricAlgs &^ (1 << 12)
)

// lookupAlg returns the spec of a supported algorithm name (exact case), or nil.
func lookupAlg(name string) *algSpec {
	for i := range algs {
		if algs[i].name == name {
			return &algs[i]
		}
	}
	return nil
}

// fits reports why key cannot verify a token signed with alg, or "" when it
// can: kty and curve, the JWK's alg, use and key_ops (RFC 8725 §3.1).
func (a *algSpec) fits(k *cache.Key) string { return a.fitsFor(k, false) }

// fitsFor is fits for an issuer that is a SPIFFE trust domain (svid true),
// which also accepts keys of use "jwt-svid": the use of its bundle's keys.
// Any other issuer refuses them, so that a bundle's key never verifies a
// token of a normal issuer even if it reached that issuer's set.
func (a *algSpec) fitsFor(k *cache.Key, svid bool) string {
	if k.Kty != a.kty {
		return "key type " + k.Kty + " does not fit " + a.name
	}
	if a.crv != "" && k.Crv != a.crv {
		return "curve " + k.Crv + " does not fit " + a.name
	}
	if a.kty == "oct" {
		if !k.Local {
			return "symmetric key not from local configuration"
		}
		if min := a.minHMACBytes(); k.Size < 8*min {
			return fmt.Sprintf("secret of %d bytes is shorter than the %d %s needs (RFC 7518 §3.2)", k.Size/8, min, a.name)
		}
	}
	if k.Alg != "" && k.Alg != a.name {
		return "key is for " + k.Alg + ", not " + a.name
	}
	switch {
	case k.Use == useJWTSVID && !svid:
		return "key use jwt-svid is accepted only for its SPIFFE trust domain"
	case k.Use == useJWTSVID && svid:
	case k.Use != "" && k.Use != "sig":
		return "key use is not sig"
	}
	if k.KeyOps != nil && !slices.Contains(k.KeyOps, "verify") {
		return "key_ops lacks verify"
	}
	return ""
}

// The registered claims whose presence the claims decoder records.
const (
	clIss uint16 = 1 << iota
	clSub
	clAud
	clExp
	clNbf
	clIat
	clJti
	clTid
)

func registeredBit(name string) uint16 {
	switch name {
	case "iss":
		return clIss
	case "sub":
		return clSub
	case "aud":
		return clAud
	case "exp":
		return clExp
	case "nbf":
		return clNbf
	case "iat":
		return clIat
	case "jti":
		return clJti
	case "tid":
		return clTid
	}
	return 0
}

// issuer is one configured issuer compiled for the hot path. Immutable.
type issuer struct {
	cfg Issuer // with defaults applied

	// prefix and suffix surround the {tenantid} placeholder when template.
	template       bool
	prefix, suffix string

	algs     uint16
	leeway   time.Duration
	required uint16   // registered claims that must be present
	others   []string // other claims that must be present
	typ      string   // normalized Type, or ""
	spiffe   string   // the trust domain name of a SPIFFE issuer, or ""
}

// sameIssuer reports whether a and b (defaults applied) configure the same
// issuer: the same Keys and Refresher, by identity, and every other field
// equal. It compares by reflection so that a field added to Issuer is
// compared without a change here (a func-valued field is never equal: such
// an issuer is rebuilt, never wrongly carried over).
func sameIssuer(a, b Issuer) bool {
	if a.Keys != b.Keys || !sameRefresher(a.Refresher, b.Refresher) {
		return false
	}
	a.Keys, a.Refresher, b.Keys, b.Refresher = nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// sameRefresher compares two refreshers by identity, without the panic of
// == on an uncomparable dynamic type (such refreshers are never the same).
func sameRefresher(a, b Refresher) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// compile validates cfg, applies its defaults and prepares it for the hot path.
func compile(cfg Issuer) (*issuer, error) {
	is := &issuer{}
	if cfg.Keys == nil {
		return nil, fmt.Errorf("verify: issuer %q: Keys is required", cfg.Issuer)
	}
	if cfg.TrustDomain != "" {
		td, err := spiffeid.TrustDomainFromString(cfg.TrustDomain)
		if err != nil {
			return nil, fmt.Errorf("verify: issuer %q: TrustDomain: %w", cfg.Issuer, err)
		}
		if cfg.Issuer == "" {
			cfg.Issuer = td.IDString()
		}
		if len(cfg.Audiences) == 0 {
			return nil, fmt.Errorf("verify: SPIFFE trust domain %q: Audiences are required (a JWT-SVID must carry aud)", td.Name())
		}
		if cfg.Introspector != nil || cfg.SkipIssuerCheck {
			return nil, fmt.Errorf("verify: SPIFFE trust domain %q: no Introspector or SkipIssuerCheck", td.Name())
		}
		is.spiffe = td.Name()
		cfg.TrustDomain = td.Name()
	}
	if cfg.Issuer == "" && !cfg.SkipIssuerCheck {
		return nil, fmt.Errorf("verify: an issuer needs an Issuer string (or SkipIssuerCheck)")
	}
	switch n := strings.Count(cfg.Issuer, tenantPlaceholder); {
	case n > 1:
		return nil, fmt.Errorf("verify: issuer %q: more than one %s", cfg.Issuer, tenantPlaceholder)
	case n == 1:
		is.template = true
		is.prefix, is.suffix, _ = strings.Cut(cfg.Issuer, tenantPlaceholder)
	}

	if len(cfg.Algorithms) == 0 {
		is.algs = asymmetricAlgs
		if cfg.AllowHMAC {
			is.algs |= hmacAlgs
		}
		if is.spiffe != "" {
			is.algs = svidAlgs
		}
		cfg.Algorithms = nil
		for _, a := range algs {
			if is.algs&a.bit != 0 {
				cfg.Algorithms = append(cfg.Algorithms, a.name)
			}
		}
	} else {
		for _, name := range cfg.Algorithms {
			if err := CheckAlgorithm(name); err != nil {
				return nil, fmt.Errorf("verify: issuer %q: %w", cfg.Issuer, err)
			}
			if bit := lookupAlg(name).bit; is.spiffe != "" && svidAlgs&bit == 0 {
				return nil, fmt.Errorf("verify: SPIFFE trust domain %q: %s is not a JWT-SVID algorithm (RS*, PS*, ES*)", is.spiffe, name)
			}
			is.algs |= lookupAlg(name).bit
		}
		cfg.Algorithms = slices.Clone(cfg.Algorithms)
	}

	switch {
	case cfg.Leeway == 0:
		cfg.Leeway = DefaultLeeway
		is.leeway = DefaultLeeway
	case cfg.Leeway > 0:
		is.leeway = cfg.Leeway
	}

	if cfg.RequiredClaims == nil {
		cfg.RequiredClaims = []string{"exp"}
	} else {
		cfg.RequiredClaims = slices.Clone(cfg.RequiredClaims)
	}
	for _, c := range cfg.RequiredClaims {
		if c == "" {
			return nil, fmt.Errorf("verify: issuer %q: empty required claim name", cfg.Issuer)
		}
		if b := registeredBit(c); b != 0 {
			is.required |= b
		} else if !slices.Contains(is.others, c) {
			is.others = append(is.others, c)
		}
	}

	if is.spiffe != "" {
		// A JWT-SVID without exp is refused whatever RequiredClaims
		// lists (JWT-SVID §3.3), as one without aud is.
		is.required |= clExp
		if t := normalizeType(cfg.Type); t != "" && t != "jwt" && t != "jose" {
			return nil, fmt.Errorf("verify: SPIFFE trust domain %q: Type %q: a JWT-SVID's typ is JWT or JOSE", is.spiffe, cfg.Type)
		}
	}
	cfg.Audiences = slices.Clone(cfg.Audiences) // none empty: CheckOptions
	for _, c := range cfg.ExtractClaims {
		if c == "" {
			return nil, fmt.Errorf("verify: issuer %q: empty claim name to extract", cfg.Issuer)
		}
	}
	cfg.ExtractClaims = slices.Clone(cfg.ExtractClaims)
	if err := CheckAZPMode(cfg.IDToken.AZP); err != nil {
		return nil, fmt.Errorf("verify: issuer %q: IDToken.AZP: %w", cfg.Issuer, err)
	}
	if slices.Contains(cfg.IDToken.ClientIDs, "") {
		return nil, fmt.Errorf("verify: issuer %q: IDToken.ClientIDs: an empty client ID", cfg.Issuer)
	}
	cfg.IDToken.ClientIDs = slices.Clone(cfg.IDToken.ClientIDs)
	cfg.IDToken.AZP = cmp.Or(cfg.IDToken.AZP, AZPWhenMultipleAudiences)
	is.typ = normalizeType(cfg.Type)
	is.cfg = cfg
	return is, nil
}

// normalizeType lowers a typ value's ASCII letters and strips
// "application/" (RFC 7515 §4.1.9).
func normalizeType(t string) string {
	t = asciifold.ToLower(t)
	return strings.TrimPrefix(t, "application/")
}

// typeMatches compares a token's typ with a normalized Type without
// allocating, ignoring ASCII case only, as JOSE libraries compare media
// types (RFC 7515 §4.1.9): "joſe" (U+017F) is not JOSE to go-spiffe, nor
// "ſecevent+jwt" a SET to a SET receiver.
func typeMatches(want, got string) bool {
	return asciifold.EqualFold(want, withoutApplication(got))
}

// withoutApplication is typ without a leading "application/" in any ASCII
// case.
func withoutApplication(typ string) string {
	const app = "application/"
	if asciifold.HasPrefixFold(typ, app) {
		return typ[len(app):]
	}
	return typ
}

// matchTemplate reports whether iss equals prefix + tid + suffix, tid being
// one non-empty path segment.
func matchTemplate(prefix, suffix, iss, tid string) bool {
	return tid != "" && !strings.Contains(tid, "/") && len(iss) == len(prefix)+len(tid)+len(suffix) &&
		strings.HasPrefix(iss, prefix) && strings.HasSuffix(iss, suffix) &&
		iss[len(prefix):len(iss)-len(suffix)] == tid
}

// fitsTemplate reports whether iss has the template's shape: the prefix, the
// suffix and one non-empty path segment between them.
func fitsTemplate(prefix, suffix, iss string) bool {
	if len(iss) <= len(prefix)+len(suffix) || !strings.HasPrefix(iss, prefix) || !strings.HasSuffix(iss, suffix) {
		return false
	}
	return !strings.Contains(iss[len(prefix):len(iss)-len(suffix)], "/")
}

// keyIssuerMatches applies a key's per-key issuer member (Microsoft Entra):
// it must equal iss, after substituting {tenantid} with tid.
func keyIssuerMatches(keyIss, iss, tid string) bool {
	if keyIss == "" {
		return true
	}
	p, s, ok := strings.Cut(keyIss, tenantPlaceholder)
	if !ok {
		return keyIss == iss
	}
	return matchTemplate(p, s, iss, tid)
}

// router maps a token's iss to its configured issuer.
type router struct {
	all       []*issuer
	exact     map[string]*issuer
	templates []*issuer
	spiffe    map[string]*issuer // SPIFFE issuers by trust domain name
	sole      *issuer            // set when exactly one issuer is configured
}

func newRouter(list []*issuer) (*router, error) {
	r := &router{all: list, exact: make(map[string]*issuer, len(list))}
	for _, is := range list {
		if is.cfg.SkipIssuerCheck && len(list) != 1 {
			return nil, fmt.Errorf("verify: SkipIssuerCheck is allowed only for a sole issuer")
		}
		if _, dup := r.exact[is.cfg.Issuer]; dup {
			return nil, fmt.Errorf("verify: issuer %q configured twice", is.cfg.Issuer)
		}
		r.exact[is.cfg.Issuer] = is
		if is.spiffe != "" {
			if r.spiffe == nil {
				r.spiffe = make(map[string]*issuer)
			}
			if _, dup := r.spiffe[is.spiffe]; dup {
				return nil, fmt.Errorf("verify: SPIFFE trust domain %q configured twice", is.spiffe)
			}
			r.spiffe[is.spiffe] = is
		}
		if is.template {
			r.templates = append(r.templates, is)
		}
	}
	if len(list) == 1 {
		r.sole = list[0]
	}
	return r, nil
}

// find returns the configured issuer that a token with this iss (hasIss
// false: none), tid and sub routes to, with ok true; when none does, it
// returns the first {tenantid} template whose shape iss has (nil when none),
// with ok false. An iss that names a configured issuer (exactly, or by a
// {tenantid} template it matches or has the shape of) wins; a token whose
// iss names none (or that has none) routes to the SPIFFE issuer of its
// sub's trust domain, when sub is a SPIFFE ID (spiffe://<td>/<path>, parsed
// by go-spiffe). It does not allocate for a token without a SPIFFE sub.
func (r *router) find(iss string, hasIss bool, tid, sub string) (is *issuer, ok bool) {
	if r.sole != nil && r.sole.cfg.SkipIssuerCheck {
		return r.sole, true
	}
	if hasIss {
		if is, ok := r.exact[iss]; ok && !is.template {
			return is, true
		}
		// An iss a template matches, or has the shape of, names that
		// configured issuer as much as an exact name does: it is never
		// handed to a trust domain by its sub, whose keys would then vouch
		// for another issuer's iss (and tid).
		var shaped *issuer
		for _, is := range r.templates {
			if matchTemplate(is.prefix, is.suffix, iss, tid) {
				return is, true
			}
			if shaped == nil && fitsTemplate(is.prefix, is.suffix, iss) {
				shaped = is
			}
		}
		if shaped != nil {
			return shaped, false
		}
	}
	if r.spiffe != nil && strings.HasPrefix(sub, spiffeScheme) {
		if is := r.findSPIFFE(sub); is != nil {
			return is, true
		}
	}
	return nil, false
}

// ownsSubject reports whether sub is a SPIFFE ID (with a path) of the
// issuer's trust domain.
func (is *issuer) ownsSubject(sub string) bool {
	id, err := spiffeid.FromString(sub)
	return err == nil && id.Path() != "" && id.TrustDomain().Name() == is.spiffe
}

// findSPIFFE returns the SPIFFE issuer of sub's trust domain, or nil when
// sub is not a SPIFFE ID with a path (a JWT-SVID's sub names a workload,
// never the trust domain itself) or its trust domain is not configured.
func (r *router) findSPIFFE(sub string) *issuer {
	id, err := spiffeid.FromString(sub)
	if err != nil || id.Path() == "" {
		return nil
	}
	return r.spiffe[id.TrustDomain().Name()]
}

// route finds the issuer of a token with the given iss (hasIss false when
// the token has none), tid and sub. On a tid mismatch it returns, with the
// error, the template the iss has the shape of.
func (r *router) route(iss string, hasIss bool, tid, sub string) (*issuer, error) {
	is, ok := r.find(iss, hasIss, tid, sub)
	switch {
	case ok:
		return is, nil
	case !hasIss:
		return nil, fmt.Errorf("%w: no iss claim", ErrMissingClaim)
	case is != nil:
		return is, fmt.Errorf("%w: iss %s does not match the tenant of tid %s", ErrWrongIssuer, quote(iss), quote(tid))
	case r.sole != nil:
		return nil, fmt.Errorf("%w: iss %s is not the configured issuer", ErrWrongIssuer, quote(iss))
	}
	return nil, fmt.Errorf("%w: iss %s", ErrUnknownIssuer, quote(iss))
}

// quote renders an untrusted value for an error message or a trace: quoted
// (so control characters are escaped) and cut to a bounded length.
func quote(s string) string {
	const max = 96
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}
