// Package servertest holds the test fixtures that the tests of server,
// server/extauthz and server/metrics share: a settable clock, the key sets
// and the verifier of the test environment, tokens minted against them, and
// golden files. It imports no package of server, so that server's own
// tests can use it. It is for tests only.
package servertest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/verify"
)

// Issuers of the test environment.
const (
	IssuerA    = "https://idp.example.com/"
	IssuerDown = "https://down.example.com/"
	Audience   = "api://orders"
)

// Epoch is the fixed instant of every test clock.
var Epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Clock is a settable test clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at Epoch.
func NewClock() *Clock { return &Clock{t: Epoch} }

// Now returns the clock's instant.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Key builds a cache.Key from an embedded test key.
func Key(t testing.TB, name, kid string) *cache.Key {
	t.Helper()
	k, err := cache.NewKey(testkeys.Public(name), cache.KeyMeta{Kid: kid})
	if err != nil {
		t.Fatalf("cache.NewKey(%s) = %v", name, err)
	}
	return k
}

// KeySet is the key set of IssuerA: RSA, EC and Ed25519 keys, usable for
// 24h from fetchedAt.
func KeySet(t testing.TB, fetchedAt time.Time) *cache.Set {
	t.Helper()
	keys := []*cache.Key{
		Key(t, testkeys.RSA2048A, "rsa-a"),
		Key(t, testkeys.EC256A, "ec-a"),
		Key(t, testkeys.Ed25519A, "ed-a"),
	}
	return cache.NewSet(keys, nil, fetchedAt, fetchedAt.Add(24*time.Hour))
}

// AddStats counts s into k's live counters, as a key source would.
func AddStats(k *cache.Keys, s cache.FetchStats) {
	c := k.Counters()
	c.Fetches.Add(s.Fetches)
	c.NotModified.Add(s.NotModified)
	c.Errors.Add(s.Errors)
	c.KeysSkipped.Add(s.KeysSkipped)
	c.UnknownKidRefreshes.Add(s.UnknownKidRefreshes)
	c.SuppressedRefreshes.Add(s.SuppressedRefreshes)
	c.NegativeKidHits.Add(s.NegativeKidHits)
}

// Config shapes the verifier of [NewEnv].
type Config struct {
	TokenCache   int  // verified-token cache entries; 0 = off
	NoDown       bool // only IssuerA
	EmptyKeys    bool // IssuerA starts without keys
	MaxTokenSize int
	// SharedCache makes the token cache a verify.TokenCache shared the way
	// a reloading process shares it (verify.Options.Cache).
	SharedCache bool
	// Tracer, if set, is the verifier's tracer.
	Tracer trace.Tracer
	// IndexClaims are the claims the verifier indexes (verify.Options): a
	// server with policies indexes what they read, as the config plan does.
	IndexClaims []string
	// NoAudiences leaves IssuerA without audiences (aud unchecked for
	// access tokens), as SPEC's id_token example configures it.
	NoAudiences bool
}

// Env is a real verifier over two issuers: IssuerA (keys loaded, claims
// scope and sub extracted) and IssuerDown (no keys: keys_unavailable), on a
// settable clock, with a log buffer for the server built over it.
type Env struct {
	Clock *Clock
	KeysA *cache.Keys
	KeysD *cache.Keys
	V     *verify.Verifier
	Logs  *testlog.Buffer
}

// NewEnv builds the verifier environment.
func NewEnv(t testing.TB, cfg Config) *Env {
	t.Helper()
	e := &Env{Clock: NewClock(), KeysA: &cache.Keys{}, KeysD: &cache.Keys{}, Logs: &testlog.Buffer{}}
	if !cfg.EmptyKeys {
		e.KeysA.Store(KeySet(t, Epoch))
	}
	issuers := []verify.Issuer{{
		Issuer:        IssuerA,
		Keys:          e.KeysA,
		Audiences:     []string{Audience},
		ExtractClaims: []string{"scope", "sub"},
		IDToken:       verify.IDTokenPolicy{ClientIDs: []string{ClientID}},
	}}
	if cfg.NoAudiences {
		issuers[0].Audiences = nil
	}
	if !cfg.NoDown {
		issuers = append(issuers, verify.Issuer{Issuer: IssuerDown, Keys: e.KeysD, Audiences: []string{Audience}})
	}
	vo := verify.Options{
		Issuers:       issuers,
		Now:           e.Clock.Now,
		TokenCache:    verify.TokenCacheOptions{MaxEntries: cfg.TokenCache},
		MaxTokenBytes: cfg.MaxTokenSize,
		Tracer:        cfg.Tracer,
		IndexClaims:   cfg.IndexClaims,
	}
	if cfg.SharedCache && cfg.TokenCache > 0 {
		tc, err := verify.NewTokenCache(vo.TokenCache)
		if err != nil {
			t.Fatal(err)
		}
		vo.Cache = tc
	}
	v, err := verify.New(vo)
	if err != nil {
		t.Fatalf("verify.New() = %v", err)
	}
	e.V = v
	return e
}

// ClaimsToHeaders is the claims_to_headers configuration of the test
// servers: IssuerA's sub and scope.
func ClaimsToHeaders() map[string]map[string]string {
	return map[string]map[string]string{IssuerA: {"sub": "X-Auth-Subject", "scope": "x-auth-scope"}}
}

// Claims returns the claims of a valid IssuerA token, with overrides (a nil
// value deletes a claim).
func Claims(over map[string]any) map[string]any {
	c := map[string]any{
		"iss":   IssuerA,
		"sub":   "alice",
		"aud":   Audience,
		"iat":   Epoch.Unix(),
		"nbf":   Epoch.Unix(),
		"exp":   Epoch.Add(time.Hour).Unix(),
		"jti":   "id-1",
		"scope": "orders:read orders:write",
		"big":   json.Number("123456789012345678901234567890"),
		"pi":    json.Number("3.14159265358979323846264338327950288"),
	}
	for k, v := range over {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

// Mint signs claims with the RSA key of IssuerA (kid rsa-a) under RS256,
// which is deterministic: golden bodies stay stable.
func Mint(c map[string]any) string {
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a"}, c)
}

// Tokens are the cases every token endpoint is tested with.
func Tokens() map[string]string {
	return map[string]string{
		"valid":            Mint(Claims(nil)),
		"expired":          Mint(Claims(map[string]any{"exp": Epoch.Add(-time.Hour).Unix()})),
		"wrong-audience":   Mint(Claims(map[string]any{"aud": "api://elsewhere"})),
		"bad-signature":    testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048B), map[string]any{"kid": "rsa-a"}, Claims(nil)),
		"unknown-kid":      testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "nope"}, Claims(nil)),
		"keys-unavailable": Mint(Claims(map[string]any{"iss": IssuerDown})),
		"unknown-issuer":   Mint(Claims(map[string]any{"iss": "https://evil.example.net/"})),
	}
}

// ClassSentinels are the library's class errors, one per class of
// verify.Classes.
var ClassSentinels = []error{
	verify.ErrMalformed, verify.ErrTokenTooLarge, verify.ErrAlgNotAllowed, verify.ErrUnknownIssuer,
	verify.ErrUnknownKid, verify.ErrBadSignature, verify.ErrExpired, verify.ErrNotYetValid,
	verify.ErrWrongIssuer, verify.ErrWrongAudience, verify.ErrMissingClaim, verify.ErrWrongType,
	verify.ErrUnsupportedCrit, verify.ErrKeysUnavailable, verify.ErrForbidden, verify.ErrInactive,
	verify.ErrInvalidDPoPProof, verify.ErrBindingMismatch, verify.ErrMissingToken,
	verify.ErrWrongNonce, verify.ErrWrongHash, verify.ErrWrongAZP, verify.ErrWrongACR, verify.ErrAuthTooOld,
	verify.ErrRevoked, verify.ErrLifetimeExceeded,
}

// ClientID is the client ID IssuerA accepts ID tokens for.
const ClientID = "web-app"

// Nonce, AccessToken and Code are the inputs an [IDToken] satisfies.
const (
	Nonce       = "n-0S6_WzA2Mj"
	AccessToken = "SlAV32hkKG"
	Code        = "Qcb0Orv1zh30vL1MPRsbm-diHiMwcLyZvn1arpZv-Jxf_11jnpEX3Tgfvk"
)

// IDToken is an ID token of IssuerA for ClientID (RS256), with the nonce
// Nonce, at_hash and c_hash of AccessToken and Code, auth_time a minute
// before Epoch and acr "silver"; header members and claims overridden as
// Claims does.
func IDToken(header map[string]any, over map[string]any) string {
	at, _ := verify.HalfHash("RS256", AccessToken)
	ch, _ := verify.HalfHash("RS256", Code)
	c := Claims(map[string]any{"aud": ClientID, "nonce": Nonce, "at_hash": at, "c_hash": ch,
		"auth_time": Epoch.Add(-time.Minute).Unix(), "acr": "silver", "scope": nil, "jti": nil})
	for k, v := range over {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	h := map[string]any{"kid": "rsa-a"}
	for k, v := range header {
		h[k] = v
	}
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), h, c)
}

// KindTokens are the tokens of other kinds, each refused (wrong_type)
// wherever an access token is asked for: a logout token, a SET, a DPoP
// proof, a JWT introspection answer, all valid otherwise; the logout token
// also where an ID token is asked for.
func KindTokens() map[string]string {
	events := map[string]any{"events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}}}
	mintTyp := func(typ string, over map[string]any) string {
		return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a", "typ": typ}, Claims(over))
	}
	return map[string]string{
		"logout-token":         mintTyp("logout+jwt", events),
		"events-claim":         Mint(Claims(events)),
		"set":                  mintTyp("application/secevent+jwt", nil),
		"dpop-proof":           mintTyp("dpop+jwt", nil),
		"introspection-answer": mintTyp("token-introspection+jwt", nil),
		// typ compares as a media type: parameters and white space
		// around the type do not make it another.
		"introspection-answer-charset": mintTyp("application/token-introspection+jwt; charset=utf-8", nil),
		"dpop-proof-space":             mintTyp("dpop+jwt ", nil),
	}
}

// APIDoc reads docs/API.md, at path from the test's package directory.
func APIDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TableRow returns the line of doc that starts a table row with first, or "".
func TableRow(doc, first string) string {
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(line, "| "+first+" |") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// GoldenJSON compares the JSON document doc (any formatting) with the
// golden file dir/name.json, or rewrites it when update is set.
func GoldenJSON(t *testing.T, dir, name string, doc []byte, update bool) {
	t.Helper()
	var compact, got bytes.Buffer
	if err := json.Compact(&compact, doc); err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	if err := json.Indent(&got, compact.Bytes(), "", "  "); err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	Golden(t, dir, name, got.Bytes(), update)
}

// Golden compares got with the golden file dir/name.json, or rewrites the
// file when update is set.
func Golden(t *testing.T, dir, name string, got []byte, update bool) {
	t.Helper()
	got = append(got, '\n')
	path := filepath.Join(dir, name+".json")
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("response differs from %s (run go test -update to accept):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// ClientCert returns a fresh self-signed client certificate (DER), made at
// test time and valid around Epoch.
func ClientCert(t testing.TB, cn string) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: Epoch.Add(-time.Hour), NotAfter: Epoch.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
