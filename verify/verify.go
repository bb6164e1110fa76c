// Package verify checks JWTs against per-issuer sets of pre-parsed keys.
//
// A [Verifier] routes each token by its iss claim (exact match) to one
// configured [Issuer], picks the key by kid from that issuer's [cache.Keys]
// (never parsing a key per call), enforces the issuer's algorithm allowlist
// and the key's type (no algorithm confusion), checks the signature, and then
// the claims: exp, nbf, iss, aud, typ and the required claims, with leeway.
// [Verifier.VerifyIDToken] checks an OIDC ID token for a relying party
// instead (idtoken.go): nonce, at_hash, c_hash, azp, auth_time and acr. A
// token of another kind (a logout token, a SET, a DPoP proof, a JWT
// introspection answer; an access token where an ID token is asked for)
// is never accepted (wrong_type).
//
// Signatures: HS* and EdDSA with golang-jwt's signing methods; RS*, PS* and
// ES* with verifiers that prepare each key once, on its first use
// (verify/internal/rsaverify, verify/internal/ecverify), held to crypto/rsa and
// crypto/ecdsa by a cross-check of each key's first accepts and a sample of
// the rest ([Options.CrossCheckRate], [Verifier.CryptoStats]).
// [Options.StandardCrypto], FIPS 140-3 mode and BoringCrypto builds use
// crypto/rsa and crypto/ecdsa instead.
//
// Every error it returns is a [*Error] (class, configured issuer, kid) that
// wraps one of the class sentinels in errors.go and matches either
// [ErrRejected] (a verdict: 401-class) or [ErrUnavailable] (could not
// decide: 503-class).
package verify

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/jwksverify/jwksverify/cache"
)

// Defaults applied by [New] to zero-valued options.
const (
	DefaultMaxTokenBytes = 16384
	DefaultLeeway        = 30 * time.Second
	DefaultMaxKidless    = 8
	// MaxExtractedLen bounds one extracted claim value, in bytes: a longer
	// value is extracted as "".
	MaxExtractedLen = 1024
)

// Refresher is asked for a fresh key set when a token names a kid that the
// issuer's current set does not hold. *jwks.Fetcher implements it.
type Refresher interface {
	// RefreshUnknownKid refreshes the issuer's key set because kid was not
	// found. It returns nil once a refresh completed (the caller then reloads
	// the set from its cache.Keys), or an error when no refresh was made: the
	// per-interval budget is spent (returned at once, never waited for), the
	// kid is remembered as missing, or the fetch failed. kid is a string
	// of its own (not a slice of the token), which it may keep. It waits for a
	// shared in-flight refresh only as long as ctx allows. An error that
	// wraps [ErrKidAbsent] says no refresh would find kid (no source, or
	// proven absent moments ago).
	RefreshUnknownKid(ctx context.Context, kid string) error
}

// Issuer is the policy and key set of one token issuer.
type Issuer struct {
	// Issuer is matched exactly against the token's iss claim. It may hold
	// the placeholder "{tenantid}" (Microsoft Entra multi-tenant): then an
	// iss matches when the placeholder stands for the token's tid claim.
	Issuer string
	// Keys holds the issuer's current key set. Required.
	Keys *cache.Keys
	// Refresher, if not nil, is asked for a refresh on an unknown kid.
	// Nil means unknown kids are rejected without a refresh.
	Refresher Refresher
	// Audiences: an access token's aud must contain at least one of them
	// (an ID token's is held to IDToken.ClientIDs instead). Empty means the
	// audience is not checked.
	Audiences []string
	// Algorithms is the allowlist of JWS alg values. Empty means every
	// asymmetric algorithm (RS*, PS*, ES*, EdDSA), plus HS256/384/512 when
	// AllowHMAC is set. "none" is always rejected, whatever this says.
	Algorithms []string
	// AllowHMAC adds HS256/384/512 to the default allowlist. Set it only when
	// the issuer's keys come from local configuration (a secret file); it has
	// no effect when Algorithms is set.
	AllowHMAC bool
	// Leeway is the clock skew tolerated on exp and nbf. Zero means
	// [DefaultLeeway] (30s); a negative value means no leeway. At most
	// [MaxLeeway].
	Leeway time.Duration
	// RequiredClaims must each be present in the token. Nil means ["exp"];
	// a non-nil empty slice requires nothing.
	RequiredClaims []string
	// Type, if set, is the required typ header (compared case-insensitively,
	// with or without the "application/" prefix, RFC 7515 §4.1.9; "at+jwt"
	// accepts "application/at+jwt", RFC 9068 §4) of access tokens; ID
	// tokens are not held to it. Empty means not checked. Whatever it
	// says, a token with an events claim or a typ of logout+jwt,
	// secevent+jwt, dpop+jwt or token-introspection+jwt is never accepted
	// (wrong_type).
	Type string
	// ExtractClaims names claims whose values are rendered once at verify
	// time into [Result.Extracted] (forward-auth headers). A value that
	// would need changing to become a header value (a control character, a
	// leading or trailing space, over [MaxExtractedLen] bytes, an array
	// element holding a space) is extracted as "", never altered.
	ExtractClaims []string
	// SkipIssuerCheck makes this issuer accept a token whatever its iss,
	// including none. It is allowed only when it is the verifier's sole
	// issuer. It MUST NOT be used in a service: it exists for the CLI, where
	// a single key set is given and no issuer is named.
	SkipIssuerCheck bool
	// TrustDomain, if set, makes the issuer a SPIFFE trust domain (a name
	// such as "example.org", validated and normalized by go-spiffe): a
	// token whose iss names no configured issuer (or that has none) is
	// routed here when its sub is a SPIFFE ID of this trust domain
	// (spiffe://example.org/<path>); keys of use "jwt-svid" (the bundle's,
	// see jwks.Options.TrustDomain) are accepted for it and refused for
	// every other issuer. Audiences are required. Issuer may be empty: it
	// then becomes the trust domain's SPIFFE ID, spiffe://example.org.
	TrustDomain string
	// Introspector, if not nil, answers for opaque tokens (tokens that are
	// not a compact JWS) routed to this issuer ([Verifier.VerifyAmong]).
	// The answer's claims are held to the same Audiences, RequiredClaims,
	// Leeway and exp/nbf checks as a JWT's, and its iss, when present, must
	// be Issuer. Nil means the issuer answers for JWTs only.
	Introspector Introspector
	// MaxLifetime, if positive, bounds exp − iat: a token (or an
	// introspection answer) that claims to live longer is
	// lifetime_exceeded ([ErrLifetimeExceeded]); one without iat is held to
	// exp − now, and a JWT without exp (RequiredClaims not requiring it)
	// is lifetime_exceeded. Revocation entries live for a retention at least this
	// long, so that no token outlives an entry that names it. Zero means
	// no bound.
	MaxLifetime time.Duration
	// IDToken says which ID tokens the issuer accepts
	// ([Verifier.VerifyIDToken]). The zero value accepts none. Audiences,
	// Type and RequiredClaims apply to access tokens only.
	IDToken IDTokenPolicy
}

// TakesSignals reports whether tokens of the issuer c configures can be
// signals ([Verifier.VerifySigned]: logout tokens, SETs): a signal names
// one issuer exactly, so a {tenantid} template, a SPIFFE trust domain and
// an issuer that skips the issuer check refuse every one. The one rule
// config and signals check a configuration against.
func (c Issuer) TakesSignals() bool {
	return !strings.Contains(c.Issuer, tenantPlaceholder) && c.TrustDomain == "" && !c.SkipIssuerCheck
}

// Options configure a [Verifier].
type Options struct {
	// Issuers are the accepted token issuers. At least one is required, and
	// their Issuer strings must be distinct.
	Issuers []Issuer
	// MaxTokenBytes bounds the token size: [MinMaxTokenBytes,
	// MaxMaxTokenBytes]. Zero means [DefaultMaxTokenBytes].
	MaxTokenBytes int
	// MaxKidless bounds how many keys a token without kid is tried against.
	// Zero means [DefaultMaxKidless] (8).
	MaxKidless int
	// Now returns the current time for [Verifier.Verify] and
	// [Verifier.Explain]; [Verifier.VerifyAt] and [Verifier.ExplainAt]
	// take the instant from their caller instead. Nil means time.Now.
	Now func() time.Time
	// TokenCache configures the verified-token cache. The zero value turns
	// it off. It is ignored when Cache is set.
	TokenCache TokenCacheOptions
	// Cache, if not nil, is the verified-token cache the verifier uses
	// instead of one of its own: a cache that outlives one verifier, shared
	// by the successive verifiers of a process that reloads its
	// configuration (see [Options.Previous] and [TokenCache.Keep]). Nil
	// means the verifier's own cache, as TokenCache says.
	Cache *TokenCache
	// Previous, if not nil, is the verifier this one replaces (a
	// configuration reload). Each of Issuers whose settings equal one of
	// Previous's issuers (the same Keys and Refresher, every other field
	// equal) is carried over as it is, and with it, when both verifiers use
	// the same Cache, its cached verdicts; any other issuer is new, and
	// verdicts cached for an issuer not carried over are never answered by
	// this verifier. No issuer is carried over when this verifier uses the
	// standard library where Previous used a prepared verifier
	// (StandardCrypto turned on), or cross-checks every accept of one where
	// Previous sampled them (CrossCheckRate raised to 1): the verdicts
	// cached under Previous are then not answered. The two share the
	// cross-check's state: its counters continue, and a disagreement
	// either sees — Previous finishing the requests it started — turns
	// the prepared verifiers off for both and drops this verifier's cached
	// verdicts. Previous keeps working otherwise unchanged. Nil means no
	// predecessor.
	Previous *Verifier
	// Tracer, if not nil, records a "verify" span per [Verifier.VerifyAt]
	// call, a child of the span in its context, with the configured issuer,
	// the alg, the class ("valid" when accepted) and whether the token cache
	// answered; never the token, its claims or key material. Under a span
	// context that is valid and not sampled it records none (a
	// parent-based sampler would drop it). Nil means no spans, at no cost.
	Tracer oteltrace.Tracer
	// StandardCrypto routes every RS*, PS* and ES* verification to
	// crypto/rsa and crypto/ecdsa instead of the prepared verifiers
	// (verify/internal/rsaverify, verify/internal/ecverify), which take 30–70% less
	// time: for an operator who will not run them (cmd's config
	// crypto.standard_library, env JWKSVERIFY_STANDARD_CRYPTO=1). False
	// means the prepared verifiers, held by the cross-check
	// (CrossCheckRate). FIPS 140-3 mode and BoringCrypto builds use the
	// standard library whatever this says.
	StandardCrypto bool
	// CrossCheckRate is the fraction of accepts by a prepared verifier that
	// are verified again with the standard library, once the key is proven
	// for the token's algorithm; every accept of a key not yet proven for
	// it (the key's first use under that algorithm, or after a
	// disagreement) is checked. A disagreement rejects the token as
	// bad_signature, is logged at error through Logger and counted in
	// [Verifier.CryptoStats]. Zero means [DefaultCrossCheckRate]; 1 checks
	// every accept (doubling the signature cost); a negative value checks
	// only until the key is proven. NaN or above 1 is refused.
	CrossCheckRate float64
	// IndexClaims names top-level claims that a caller reads with
	// [Result.ClaimValues] on every request (authorization policies:
	// policy.Set.ClaimNames). The verifier records where each one is in the
	// claims set when it verifies a token, so that reading them later, on
	// every token-cache hit, scans nothing. Nil means none: ClaimValues
	// scans the claims set.
	IndexClaims []string
	// Logger receives the verifier's error logs: cross-check disagreements,
	// with the issuer, alg and key, never the token. Nil discards them.
	Logger *slog.Logger
}

// TokenCacheOptions configure the verified-token cache. It remembers only
// successful verdicts, keyed by the token: by a 128-bit MAC of the whole
// token under a key drawn at random for each Verifier (AES-GMAC; SHA-256
// where GCM is refused), so that an entry does not keep the token itself and
// a different token matches with negligible probability. An entry lives until
// the token's exp (a token without exp: at most 5 minutes), and every hit
// re-checks exp and nbf with the issuer's leeway, that the issuer's key set
// is still usable, and that the key that verified the token is still in it.
type TokenCacheOptions struct {
	// MaxEntries bounds the number of cached verdicts, at most
	// [MaxCacheEntries]. Zero turns the cache off.
	MaxEntries int
	// MaxBytes bounds the heap the cached results use, as the cache
	// estimates it (within about 10%: an RS256 token with a 250-byte payload
	// costs about 720 bytes). Zero means 1 KiB per entry times MaxEntries, at
	// least 1 MiB.
	MaxBytes int64
}

// Result is a verified token. It is immutable and may be shared between
// callers (the token cache hands out the same *Result); do not modify it.
type Result struct {
	// Issuer is the token's iss claim (for SkipIssuerCheck, whatever it
	// was); for a SPIFFE trust domain, its configured name (spiffe://td):
	// a JWT-SVID's iss is checked by nothing.
	Issuer string
	// ConfiguredIssuer is the [Issuer.Issuer] of the configured issuer
	// whose keys verified the token: Issuer itself for an exact issuer, the
	// template for a {tenantid} one. Callers that keep per-issuer settings
	// look them up by this name rather than by routing Issuer again.
	ConfiguredIssuer string
	// Kid, Alg and Type are the token's header values ("" when absent).
	Kid, Alg, Type string
	// Header is the decoded JOSE header, exactly as in the token.
	Header json.RawMessage
	// Claims is the decoded claims set, exactly as in the token (numbers are
	// not rounded); it is a JSON object in valid UTF-8.
	Claims json.RawMessage
	// Subject is the sub claim, or "".
	Subject string
	// Audience is the aud claim as a list (a single string becomes one item).
	Audience []string
	// ExpiresAt, NotBefore and IssuedAt are the time claims; zero when absent.
	ExpiresAt, NotBefore, IssuedAt time.Time
	// ID is the jti claim, or "".
	ID string
	// Extracted maps each of the issuer's ExtractClaims present in the token
	// to its header form, or "" when it would need changing to be one
	// ([Issuer.ExtractClaims]).
	Extracted map[string]string
	// Thumbprint identifies the key that verified the token (RFC 7638);
	// "" for an opaque token.
	Thumbprint string
	// Opaque reports that the token was not a JWT: its claims are the
	// answer of the issuer's introspection endpoint (RFC 7662), and Kid,
	// Alg, Type are "" and Header is {}.
	Opaque bool
	// Confirmation is the token's cnf claim (RFC 7800), nil when absent:
	// what a sender-constrained token is bound to, for the binding checks
	// of DPoP (package dpop) and mTLS (package mtls).
	Confirmation *Confirmation

	// idxNames are the verifier's IndexClaims (shared), idxSpans where
	// each is in Claims (end 0: absent). Offsets, not strings, so that the
	// token cache's compact copy of Claims keeps them true.
	idxNames []string
	idxSpans []claimSpan
	// cached marks the verified-token cache's copy (Cached).
	cached bool
}

// Cached reports whether r is the verified-token cache's copy of its
// token's verdict: the same *Result is handed out on every hit until the
// entry ends, so a caller may keep data derived from it keyed by the
// pointer. A Result that is not cached is made for one call.
func (r *Result) Cached() bool { return r.cached }

// Confirmation is a decoded cnf claim.
type Confirmation struct {
	// JKT is cnf.jkt: the RFC 7638 thumbprint of the DPoP key the token is
	// bound to (RFC 9449 §6.1), "" when absent.
	JKT string
	// X5tS256 is cnf["x5t#S256"]: base64url SHA-256 of the client
	// certificate the token is bound to (RFC 8705 §3.1), "" when absent.
	X5tS256 string
	// Other lists the cnf members of other confirmation methods (jwk, jku,
	// kid, …), which nothing here can check. A token bound only by them is
	// refused wherever sender constraints are checked.
	Other []string
}

// Step is one check of [Verifier.Explain], in the order the verifier runs them.
type Step struct {
	// Check names the check, in the order the verifier runs them: "size",
	// "structure", "header", "crit", "issuer", "alg", "key", "signature",
	// "kind", "exp", "nbf", "aud", "typ", "claims" (docs/ARCHITECTURE.md); an ID
	// token's ([Verifier.ExplainIDTokenAt]) then "iat", "azp", and those
	// of the inputs given: "nonce", "at_hash", "c_hash", "auth_time",
	// "acr".
	Check string `json:"check"`
	// OK reports whether the check passed.
	OK bool `json:"ok"`
	// Detail says what was compared, without secrets or the token.
	Detail string `json:"detail,omitempty"`
}

// CacheStats are the verified-token cache's counters.
type CacheStats struct {
	Hits, Misses, Evictions uint64
	Entries                 int
	Bytes                   int64
}
