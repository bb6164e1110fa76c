package verify_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

func TestVerifyEveryAlgorithm(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	for _, alg := range testkeys.Algorithms {
		t.Run(alg, func(t *testing.T) {
			tok := mint(alg, kidFor(alg), map[string]any{"jti": "id-1", "nbf": t0.Unix()})
			res, err := v.Verify(context.Background(), tok)
			if err != nil {
				t.Fatalf("Verify() = %v, want nil", err)
			}
			want := keyFor(t, alg, kidFor(alg))
			if res.Alg != alg || res.Kid != kidFor(alg) || res.Issuer != issA || res.Subject != "alice" ||
				res.ID != "id-1" || res.Thumbprint != want.Thumbprint {
				t.Errorf("Verify() = %+v, want alg %s kid %s iss %s sub alice jti id-1", res, alg, kidFor(alg), issA)
			}
			if !slices.Equal(res.Audience, []string{aud}) {
				t.Errorf("Audience = %q, want [%q]", res.Audience, aud)
			}
			if !res.ExpiresAt.Equal(t0.Add(time.Hour)) || !res.IssuedAt.Equal(t0) || !res.NotBefore.Equal(t0) {
				t.Errorf("times = %v %v %v, want exp t0+1h, iat t0, nbf t0", res.ExpiresAt, res.IssuedAt, res.NotBefore)
			}
			if !bytes.Equal(res.Claims, segment(t, tok, 1)) || !bytes.Equal(res.Header, segment(t, tok, 0)) {
				t.Errorf("Claims/Header are not the token's exact bytes")
			}
		})
		t.Run(alg+"/no-kid", func(t *testing.T) {
			res, err := v.Verify(context.Background(), mint(alg, "", nil))
			if err != nil {
				t.Fatalf("Verify() = %v, want nil", err)
			}
			if res.Kid != "" || res.Thumbprint != keyFor(t, alg, "").Thumbprint {
				t.Errorf("Verify() kid %q thumbprint %s, want the %s key", res.Kid, res.Thumbprint, alg)
			}
		})
	}
}

// TestEveryErrorClass produces each class of verify.Classes.
func TestEveryErrorClass(t *testing.T) {
	keys := allKeys(t)
	stale := &cache.Keys{}
	stale.Store(cache.NewSet([]*cache.Key{keyFor(t, "RS256", "k-RS256")}, nil, t0.Add(-2*time.Hour), t0.Add(-time.Hour)))
	one := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(keys)}, MaxTokenBytes: 4096})
	two := newVerifier(t, verify.Options{Issuers: []verify.Issuer{
		issuerA(keys),
		{Issuer: issB, Keys: stale},
		{Issuer: "https://c.example.com/", Keys: &cache.Keys{}},
		{Issuer: "https://t.example.com/", Keys: keys, Type: "at+jwt", RequiredClaims: []string{"exp", "scope"}},
	}})
	short := issuerA(keys)
	short.MaxLifetime = 30 * time.Minute
	lifetime := newVerifier(t, verify.Options{Issuers: []verify.Issuer{short}})
	opaque := issuerA(keys)
	opaque.Introspector = introspector(t, issA, nil)
	withIntrospection := newVerifier(t, verify.Options{Issuers: []verify.Issuer{opaque}})
	rs := func(extra map[string]any) string { return mint("RS256", "k-RS256", extra) }
	goodSig := rs(nil)
	parts := strings.Split(goodSig, ".")

	tests := []struct {
		name    string
		v       *verify.Verifier
		token   string
		wantErr error
	}{
		{"too-large", one, strings.Repeat("a", 4097), verify.ErrTokenTooLarge},
		{"two-segments", one, parts[0] + "." + parts[1], verify.ErrMalformed},
		{"four-segments", one, goodSig + ".x", verify.ErrMalformed},
		{"padding", one, parts[0] + "=." + parts[1] + "." + parts[2], verify.ErrMalformed},
		{"line-break", one, parts[0] + "\n." + parts[1] + "." + parts[2], verify.ErrMalformed},
		{"space", one, parts[0] + " ." + parts[1] + "." + parts[2], verify.ErrMalformed},
		{"payload-array", one, signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, `["iss"]`), verify.ErrMalformed},
		{"payload-not-utf8", one, signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, "{\"sub\":\"\xff\"}"), verify.ErrMalformed},
		{"payload-too-deep", one, signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, `{"a":`+strings.Repeat("[", 64)+strings.Repeat("]", 64)+`}`), verify.ErrMalformed},
		{"payload-duplicate-exp", one, signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, `{"iss":"`+issA+`","exp":1,"\u0065xp":9999999999}`), verify.ErrMalformed},
		{"exp-string", one, rs(map[string]any{"exp": "tomorrow"}), verify.ErrMalformed},
		// cnf names the key the token is bound to: a duplicate member in it
		// is as ambiguous as one at the top level (the binding check took
		// the last jkt, a first-wins parser downstream the first).
		{"cnf-duplicate-jkt", one, signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`,
			fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"cnf":{"jkt":"victim-key","jkt":"attacker-key"}}`, issA, aud, t0.Add(time.Hour).Unix())), verify.ErrMalformed},
		{"cnf-duplicate-escaped", one, signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`,
			fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"cnf":{"x5t#S256":"a","x5t\u0023S256":"b"}}`, issA, aud, t0.Add(time.Hour).Unix())), verify.ErrMalformed},
		// Any nested object too: CEL and encoding/json keep the last
		// roles, gjson and an application reading the forwarded token
		// first-wins the first.
		{"nested-duplicate-roles", one, signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`,
			fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"realm_access":{"roles":["user"],"roles":["admin"]}}`, issA, aud, t0.Add(time.Hour).Unix())), verify.ErrMalformed},
		{"nested-duplicate-in-list", one, signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`,
			fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,"orgs":[{"id":"a","\u0069d":"b"}]}`, issA, aud, t0.Add(time.Hour).Unix())), verify.ErrMalformed},
		{"header-nested-duplicate", one, signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256","x":{"a":1,"a":2}}`,
			fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d}`, issA, aud, t0.Add(time.Hour).Unix())), verify.ErrMalformed},
		{"aud-number", one, rs(map[string]any{"aud": 7}), verify.ErrMalformed},
		{"no-alg", one, signRaw(t, "RS256", `{"kid":"k-RS256"}`, `{"iss":"`+issA+`"}`), verify.ErrMalformed},
		{"alg-none", one, signRaw(t, "HS256", `{"alg":"none"}`, `{"iss":"`+issA+`"}`), verify.ErrAlgNotAllowed},
		{"crit", one, testkeys.Mint("RS256", testkeys.SigningKey("RS256"), map[string]any{"kid": "k-RS256", "crit": []string{"exp"}}, claims(nil)), verify.ErrUnsupportedCrit},
		{"no-iss", one, rs(map[string]any{"iss": nil}), verify.ErrMissingClaim},
		{"sole-issuer-mismatch", one, rs(map[string]any{"iss": issB}), verify.ErrWrongIssuer},
		{"unknown-issuer", two, rs(map[string]any{"iss": "https://nobody.example.com/"}), verify.ErrUnknownIssuer},
		{"keys-stale", two, rs(map[string]any{"iss": issB}), verify.ErrKeysUnavailable},
		{"keys-never-loaded", two, rs(map[string]any{"iss": "https://c.example.com/"}), verify.ErrKeysUnavailable},
		{"unknown-kid", one, mint("RS256", "k-nope", nil), verify.ErrUnknownKid},
		{"bad-signature", one, parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])), verify.ErrBadSignature},
		{"bad-signature-other-key", one, testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048B), map[string]any{"kid": "k-RS256"}, claims(nil)), verify.ErrBadSignature},
		{"expired", one, rs(map[string]any{"exp": t0.Add(-time.Hour).Unix()}), verify.ErrExpired},
		{"no-exp", one, rs(map[string]any{"exp": nil}), verify.ErrMissingClaim},
		{"not-yet-valid", one, rs(map[string]any{"nbf": t0.Add(time.Hour).Unix()}), verify.ErrNotYetValid},
		{"no-aud", one, rs(map[string]any{"aud": nil}), verify.ErrMissingClaim},
		{"wrong-audience", one, rs(map[string]any{"aud": []string{"api://other", "x"}}), verify.ErrWrongAudience},
		{"wrong-type", two, rs(map[string]any{"iss": "https://t.example.com/", "scope": "a"}), verify.ErrWrongType},
		{"missing-custom-claim", two, testkeys.Mint("RS256", testkeys.SigningKey("RS256"), map[string]any{"kid": "k-RS256", "typ": "at+jwt"}, claims(map[string]any{"iss": "https://t.example.com/"})), verify.ErrMissingClaim},
		{"inactive", withIntrospection, "opaque-and-revoked", verify.ErrInactive},
		{"lifetime-exceeded", lifetime, rs(nil), verify.ErrLifetimeExceeded},
		{"lifetime-exceeded-no-iat", lifetime, rs(map[string]any{"iat": nil}), verify.ErrLifetimeExceeded},
		{"hs-token-rs-key", one, testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"kid": "k-RS256"}, claims(nil)), verify.ErrAlgNotAllowed},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.v.Verify(context.Background(), tt.token)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
			family := verify.ErrRejected
			if tt.wantErr == verify.ErrKeysUnavailable {
				family = verify.ErrUnavailable
			}
			if !errors.Is(err, family) {
				t.Errorf("Verify() = %v, want it to match %v", err, family)
			}
			seen[verify.Class(err)] = true
		})
	}
	// Classes decided after the verifier accepted a token: the binding
	// checks of package dpop and of the server (their tests produce them).
	afterVerify := map[string]bool{"invalid_dpop_proof": true, "binding_mismatch": true}
	// missing_token is the server's: a request that carries no token never
	// reaches the verifier (package server's tests produce it).
	afterVerify["missing_token"] = true
	// revoked is the server's revocation stage's (package server's tests).
	afterVerify["revoked"] = true
	// The ID-token classes come only from VerifyIDToken
	// (TestVerifyIDTokenRules produces each one).
	for _, c := range []string{"wrong_nonce", "wrong_hash", "wrong_azp", "wrong_acr", "auth_too_old"} {
		afterVerify[c] = true
	}
	for _, c := range verify.Classes() {
		// forbidden is the policy layer's (package policy tests produce it):
		// the verifier never refuses a valid token.
		if !seen[c] && !afterVerify[c] && c != verify.Class(verify.ErrForbidden) {
			t.Errorf("no test produced class %q", c)
		}
	}
}

func TestAlgNotInAllowlist(t *testing.T) {
	keys := allKeys(t)
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, Algorithms: []string{"ES256"}}}})
	if _, err := v.Verify(context.Background(), mint("RS256", "k-RS256", nil)); !errors.Is(err, verify.ErrAlgNotAllowed) {
		t.Fatalf("Verify(RS256) = %v, want %v", err, verify.ErrAlgNotAllowed)
	}
	if _, err := v.Verify(context.Background(), mint("ES256", "k-ES256", nil)); err != nil {
		t.Fatalf("Verify(ES256) = %v, want nil", err)
	}
	// The default allowlist leaves HMAC out.
	def := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys}}})
	if _, err := def.Verify(context.Background(), mint("HS256", "k-HS256", nil)); !errors.Is(err, verify.ErrAlgNotAllowed) {
		t.Fatalf("Verify(HS256) with the default allowlist = %v, want %v", err, verify.ErrAlgNotAllowed)
	}
	// An alg golang-jwt knows nothing of.
	if _, err := def.Verify(context.Background(), signRaw(t, "HS256", `{"alg":"XS999"}`, `{"iss":"`+issA+`"}`)); !errors.Is(err, verify.ErrAlgNotAllowed) {
		t.Fatalf("Verify(XS999) = %v, want %v", err, verify.ErrAlgNotAllowed)
	}
}

func TestNoneIsAlwaysRejected(t *testing.T) {
	keys := allKeys(t)
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(keys)}})
	payload := `{"iss":"` + issA + `","aud":"` + aud + `","exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) + `}`
	for _, alg := range []string{"none", "None", "NONE", "nOnE"} {
		for _, withSig := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sig=%v", alg, withSig), func(t *testing.T) {
				tok := signRaw(t, "HS256", `{"alg":"`+alg+`","kid":"k-HS256"}`, payload)
				if !withSig {
					tok = tok[:strings.LastIndexByte(tok, '.')+1]
				}
				if _, err := v.Verify(context.Background(), tok); !errors.Is(err, verify.ErrAlgNotAllowed) {
					t.Fatalf("Verify() = %v, want %v", err, verify.ErrAlgNotAllowed)
				}
			})
		}
	}
}

// TestAlgorithmConfusion: an HS256 token whose secret is the RSA public key
// (PEM, DER or JWK JSON) must never verify against that RSA key.
func TestAlgorithmConfusion(t *testing.T) {
	pub := testkeys.Public(testkeys.RSA2048A).(*rsa.PublicKey)
	rsaKey := newKey(t, pub, cache.KeyMeta{Kid: "rsa"})
	pemBytes, derBytes := publicPEM(t, pub)
	secrets := map[string][]byte{
		"pem": pemBytes,
		"der": derBytes,
		"jwk": testkeys.JWKJSON(testkeys.JWK{Key: pub, Kid: "rsa"}),
	}
	policies := map[string]verify.Issuer{
		"hs256-allowed":     {Issuer: issA, Keys: keysOf(rsaKey), Algorithms: []string{"HS256", "RS256"}},
		"hmac-by-default":   {Issuer: issA, Keys: keysOf(rsaKey), AllowHMAC: true},
		"default-allowlist": {Issuer: issA, Keys: keysOf(rsaKey)},
	}
	for pname, pol := range policies {
		v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{pol}})
		for sname, secret := range secrets {
			for _, kid := range []string{"rsa", ""} {
				t.Run(fmt.Sprintf("%s/%s/kid=%q", pname, sname, kid), func(t *testing.T) {
					h := map[string]any{}
					if kid != "" {
						h["kid"] = kid
					}
					tok := testkeys.Mint("HS256", secret, h, claims(map[string]any{"aud": nil}))
					_, err := v.Verify(context.Background(), tok)
					if !errors.Is(err, verify.ErrAlgNotAllowed) {
						t.Fatalf("Verify() = %v, want %v", err, verify.ErrAlgNotAllowed)
					}
				})
			}
		}
	}
}

// TestKeyFit: the token's alg must fit the key's kty, curve, alg, use and key_ops.
func TestKeyFit(t *testing.T) {
	rsaPub := testkeys.Public(testkeys.RSA2048A)
	ecPub := testkeys.Public(testkeys.EC256A).(*ecdsa.PublicKey)
	tests := []struct {
		name    string
		alg     string
		key     *cache.Key
		wantErr error
	}{
		{"rs256-on-ec-key", "RS256", newKey(t, ecPub, cache.KeyMeta{Kid: "k"}), verify.ErrAlgNotAllowed},
		{"es256-on-rsa-key", "ES256", newKey(t, rsaPub, cache.KeyMeta{Kid: "k"}), verify.ErrAlgNotAllowed},
		{"es384-on-p256-key", "ES384", newKey(t, ecPub, cache.KeyMeta{Kid: "k"}), verify.ErrAlgNotAllowed},
		{"eddsa-on-ec-key", "EdDSA", newKey(t, ecPub, cache.KeyMeta{Kid: "k"}), verify.ErrAlgNotAllowed},
		{"ps256-on-rs256-jwk", "PS256", newKey(t, rsaPub, cache.KeyMeta{Kid: "k", Alg: "RS256"}), verify.ErrAlgNotAllowed},
		{"use-enc", "RS256", newKey(t, rsaPub, cache.KeyMeta{Kid: "k", Use: "enc"}), verify.ErrAlgNotAllowed},
		{"key-ops-encrypt", "RS256", newKey(t, rsaPub, cache.KeyMeta{Kid: "k", KeyOps: []string{"encrypt"}}), verify.ErrAlgNotAllowed},
		{"rs256-jwk-ok", "RS256", newKey(t, rsaPub, cache.KeyMeta{Kid: "k", Alg: "RS256", Use: "sig", KeyOps: []string{"verify"}}), nil},
		{"ps256-no-jwk-alg-ok", "PS256", newKey(t, rsaPub, cache.KeyMeta{Kid: "k"}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keysOf(tt.key)}}})
			_, err := v.Verify(context.Background(), mint(tt.alg, "k", map[string]any{"aud": nil}))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestIssuerBoundKeys: a key of issuer A never verifies a token claiming issuer B.
func TestIssuerBoundKeys(t *testing.T) {
	keyA := keyFor(t, "RS256", "shared-kid")
	keyB := newKey(t, testkeys.Public(testkeys.RSA2048B), cache.KeyMeta{Kid: "shared-kid"})
	keyBOnly := newKey(t, testkeys.Public(testkeys.RSA2048B), cache.KeyMeta{Kid: "b-only"})
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{
		{Issuer: issA, Keys: keysOf(keyA)},
		{Issuer: issB, Keys: keysOf(keyB, keyBOnly)},
	}})
	signedByA := func(kid string) string {
		h := map[string]any{}
		if kid != "" {
			h["kid"] = kid
		}
		return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), h, claims(map[string]any{"iss": issB, "aud": nil}))
	}
	tests := []struct {
		name    string
		token   string
		wantErr error
	}{
		{"same-kid-in-b", signedByA("shared-kid"), verify.ErrBadSignature},
		{"kid-only-in-a", testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "a-only"}, claims(map[string]any{"iss": issB, "aud": nil})), verify.ErrUnknownKid},
		{"no-kid", signedByA(""), verify.ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := v.Verify(context.Background(), tt.token); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
		})
	}
	// The same token with iss A verifies: the failure above is the binding.
	tok := testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "shared-kid"}, claims(map[string]any{"aud": nil}))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("Verify(iss A) = %v, want nil", err)
	}
}

func TestTenantTemplate(t *testing.T) {
	const tmpl = "https://login.example.com/{tenantid}/v2.0"
	const tid = "9188040d-6c67-4c5b-b112-36a304b66dad"
	const iss = "https://login.example.com/" + tid + "/v2.0"
	bound := newKey(t, testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Kid: "bound", Issuer: tmpl})
	other := newKey(t, testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Kid: "other", Issuer: "https://elsewhere.example.com/"})
	free := newKey(t, testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Kid: "free"}) // bound to no issuer
	keys := keysOf(bound, other, free)
	multi := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: tmpl, Keys: keys}, {Issuer: issA, Keys: keys}}})
	sole := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: tmpl, Keys: keys}}})
	// Keys without kid, tried in turn by a token without kid: the one bound
	// to another issuer is passed over as the kid path refuses it.
	boundKidless := newKey(t, testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Issuer: tmpl})
	otherKidless := newKey(t, testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Issuer: "https://elsewhere.example.com/"})
	kidlessOther := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: tmpl, Keys: keysOf(otherKidless)}, {Issuer: issA, Keys: keys}}})
	kidlessBoth := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: tmpl, Keys: keysOf(otherKidless, boundKidless)}, {Issuer: issA, Keys: keys}}})
	tok := func(kid string, extra map[string]any) string {
		return mint("RS256", kid, merge(map[string]any{"aud": nil, "iss": iss, "tid": tid}, extra))
	}
	tests := []struct {
		name    string
		v       *verify.Verifier
		token   string
		wantErr error
	}{
		{"match", multi, tok("bound", nil), nil},
		{"match-sole", sole, tok("bound", nil), nil},
		{"tid-mismatch", multi, tok("bound", map[string]any{"tid": "other-tenant"}), verify.ErrWrongIssuer},
		{"no-tid", multi, tok("bound", map[string]any{"tid": nil}), verify.ErrWrongIssuer},
		{"tid-not-string", multi, tok("bound", map[string]any{"tid": 5}), verify.ErrWrongIssuer},
		{"other-shape-multi", multi, tok("bound", map[string]any{"iss": "https://x.example.com/"}), verify.ErrUnknownIssuer},
		{"other-shape-sole", sole, tok("bound", map[string]any{"iss": "https://x.example.com/"}), verify.ErrWrongIssuer},
		{"key-bound-elsewhere", multi, tok("other", nil), verify.ErrWrongIssuer},
		{"template-literal-iss", multi, tok("bound", map[string]any{"iss": tmpl}), verify.ErrWrongIssuer},
		// The template's own text as iss names no tenant, even for a key
		// bound to no issuer.
		{"template-literal-iss-free-key", multi, tok("free", map[string]any{"iss": tmpl}), verify.ErrWrongIssuer},
		// A tenant is one non-empty path segment: an iss with none, two, or
		// one where the prefix and suffix overlap is no tenant's.
		{"empty-tenant", multi, tok("bound", map[string]any{"iss": "https://login.example.com//v2.0", "tid": nil}), verify.ErrUnknownIssuer},
		{"empty-tenant-sole", sole, tok("bound", map[string]any{"iss": "https://login.example.com//v2.0", "tid": nil}), verify.ErrWrongIssuer},
		{"two-segment-tenant", multi, tok("bound", map[string]any{"iss": "https://login.example.com/a/b/v2.0", "tid": "a/b"}), verify.ErrUnknownIssuer},
		{"prefix-and-suffix-overlap", multi, tok("bound", map[string]any{"iss": "https://login.example.com/v2.0"}), verify.ErrUnknownIssuer},
		{"kidless-key-bound-elsewhere", kidlessOther, tok("", nil), verify.ErrWrongIssuer},
		{"kidless-bound-key-after-another", kidlessBoth, tok("", nil), nil},
		{"exact-issuer-bound-key", multi, tok("bound", map[string]any{"iss": issA}), verify.ErrWrongIssuer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.v.Verify(context.Background(), tt.token)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (res.Issuer != iss || res.ConfiguredIssuer != tmpl) {
				t.Errorf("Issuer, ConfiguredIssuer = %q, %q, want %q, %q", res.Issuer, res.ConfiguredIssuer, iss, tmpl)
			}
		})
	}
}

// TestConfiguredIssuer: the Result names the configured issuer that verified
// the token — the token's iss for an exact issuer, the configured name under
// SkipIssuerCheck, and, of two {tenantid} templates that both fit an iss, the
// one whose tenant equals the token's tid.
func TestConfiguredIssuer(t *testing.T) {
	keys := allKeys(t)
	const wide, narrow = "https://login.example.com/{tenantid}/v2.0", "https://login.example.com/t-{tenantid}/v2.0"
	templates := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: wide, Keys: keys}, {Issuer: narrow, Keys: keys}, {Issuer: issA, Keys: keys}}})
	skip := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issB, SkipIssuerCheck: true, Keys: keys}}})
	tests := []struct {
		name  string
		v     *verify.Verifier
		extra map[string]any
		want  string
	}{
		{"exact", templates, nil, issA},
		{"wide-template", templates, map[string]any{"aud": nil, "iss": "https://login.example.com/t-abc/v2.0", "tid": "t-abc"}, wide},
		{"narrow-template", templates, map[string]any{"aud": nil, "iss": "https://login.example.com/t-abc/v2.0", "tid": "abc"}, narrow},
		{"skip-issuer-check", skip, map[string]any{"iss": "https://anyone.example.com/"}, issB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.v.Verify(context.Background(), mint("ES256", kidFor("ES256"), tt.extra))
			if err != nil {
				t.Fatalf("Verify() = %v, want nil", err)
			}
			if res.ConfiguredIssuer != tt.want {
				t.Errorf("ConfiguredIssuer = %q, want %q", res.ConfiguredIssuer, tt.want)
			}
		})
	}
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestSkipIssuerCheck(t *testing.T) {
	keys := keysOf(keyFor(t, "ES256", "k"))
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Keys: keys, SkipIssuerCheck: true}}})
	for _, iss := range []any{nil, "https://anyone.example.com/"} {
		res, err := v.Verify(context.Background(), mint("ES256", "k", map[string]any{"iss": iss}))
		if err != nil {
			t.Fatalf("Verify(iss %v) = %v, want nil", iss, err)
		}
		if want, _ := iss.(string); res.Issuer != want {
			t.Errorf("Issuer = %q, want %q", res.Issuer, want)
		}
	}
}

func TestType(t *testing.T) {
	keys := allKeys(t)
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, Type: "at+jwt"}}})
	for _, tt := range []struct {
		typ     any
		wantErr error
	}{
		{"at+jwt", nil},
		{"application/at+jwt", nil},
		{"AT+JWT", nil},
		{"Application/At+Jwt", nil},
		{"JWT", verify.ErrWrongType},
		{"application/jwt", verify.ErrWrongType},
		{"at+jwt2", verify.ErrWrongType},
		{nil, verify.ErrWrongType},
	} {
		t.Run(fmt.Sprint(tt.typ), func(t *testing.T) {
			tok := testkeys.Mint("ES256", testkeys.SigningKey("ES256"), map[string]any{"kid": "k-ES256", "typ": tt.typ}, claims(nil))
			res, err := v.Verify(context.Background(), tok)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
			if err == nil && res.Type != tt.typ {
				t.Errorf("Type = %q, want %q", res.Type, tt.typ)
			}
		})
	}
}

func TestCritIsUnsupported(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	for _, crit := range []any{[]string{"b64"}, []string{}, "x"} {
		tok := testkeys.Mint("ES256", testkeys.SigningKey("ES256"), map[string]any{"kid": "k-ES256", "crit": crit, "b64": false}, claims(nil))
		if _, err := v.Verify(context.Background(), tok); !errors.Is(err, verify.ErrUnsupportedCrit) {
			t.Fatalf("Verify(crit %v) = %v, want %v", crit, err, verify.ErrUnsupportedCrit)
		}
	}
}

func TestJKUAndX5UAreIgnored(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	h := map[string]any{"kid": "k-ES256", "jku": "https://evil.example.com/jwks", "x5u": "https://evil.example.com/x5"}
	if _, err := v.Verify(context.Background(), testkeys.Mint("ES256", testkeys.SigningKey("ES256"), h, claims(nil))); err != nil {
		t.Fatalf("Verify() = %v, want nil", err)
	}
	// A key named by jku is never fetched: a token signed by another key fails.
	other := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256B), h, claims(nil))
	if _, err := v.Verify(context.Background(), other); !errors.Is(err, verify.ErrBadSignature) {
		t.Fatalf("Verify(other key) = %v, want %v", err, verify.ErrBadSignature)
	}
}

func TestLeeway(t *testing.T) {
	keys := allKeys(t)
	exp := t0
	nbf := t0
	tests := []struct {
		name    string
		leeway  time.Duration
		now     time.Time
		claim   string
		wantErr error
	}{
		{"exp-default-leeway-inside", 0, exp.Add(29 * time.Second), "exp", nil},
		{"exp-default-leeway-edge", 0, exp.Add(30 * time.Second), "exp", verify.ErrExpired},
		{"exp-leeway-10s-inside", 10 * time.Second, exp.Add(9 * time.Second), "exp", nil},
		{"exp-leeway-10s-edge", 10 * time.Second, exp.Add(10 * time.Second), "exp", verify.ErrExpired},
		{"exp-no-leeway-before", -1, exp.Add(-time.Second), "exp", nil},
		{"exp-no-leeway-at", -1, exp, "exp", verify.ErrExpired},
		{"nbf-default-leeway-edge", 0, nbf.Add(-30 * time.Second), "nbf", nil},
		{"nbf-default-leeway-outside", 0, nbf.Add(-31 * time.Second), "nbf", verify.ErrNotYetValid},
		{"nbf-no-leeway-at", -1, nbf, "nbf", nil},
		{"nbf-no-leeway-before", -1, nbf.Add(-time.Second), "nbf", verify.ErrNotYetValid},
		// An iat ahead of now: a token issued in the future would escape
		// every issued_before revocation.
		{"iat-default-leeway-edge", 0, nbf.Add(-30 * time.Second), "iat", nil},
		{"iat-default-leeway-outside", 0, nbf.Add(-31 * time.Second), "iat", verify.ErrNotYetValid},
		{"iat-no-leeway-before", -1, nbf.Add(-time.Second), "iat", verify.ErrNotYetValid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t, verify.Options{
				Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, Leeway: tt.leeway}},
				Now:     func() time.Time { return tt.now },
			})
			extra := map[string]any{"aud": nil}
			switch tt.claim {
			case "exp":
				extra["exp"], extra["iat"] = exp.Unix(), exp.Add(-time.Hour).Unix()
			case "iat":
				extra["iat"], extra["exp"] = nbf.Unix(), nbf.Add(time.Hour).Unix()
			default:
				extra["nbf"], extra["exp"], extra["iat"] = nbf.Unix(), nbf.Add(time.Hour).Unix(), nbf.Add(-time.Hour).Unix()
			}
			_, err := v.Verify(context.Background(), mint("ES256", "k-ES256", extra))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestNumericDates(t *testing.T) {
	keys := allKeys(t)
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, Leeway: -1}}})
	base := fmt.Sprint(t0.Unix())
	tests := []struct {
		name    string
		exp     string
		wantExp time.Time
		wantErr error
	}{
		{"fraction-inside", base + ".5", t0.Add(500 * time.Millisecond), nil},
		{"fraction-past", fmt.Sprint(t0.Unix()-1) + ".999", time.Time{}, verify.ErrExpired},
		{"exponent", "2.0e9", time.Unix(2e9, 0), nil},
		{"huge", "1e300", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), nil},
		{"big-integer", "99999999999999999999999", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), nil},
		{"negative", "-1", time.Time{}, verify.ErrExpired},
		{"string", `"` + base + `"`, time.Time{}, verify.ErrMalformed},
		{"null", "null", time.Time{}, verify.ErrMalformed},
		{"bool", "true", time.Time{}, verify.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := signRaw(t, "ES256", `{"alg":"ES256","kid":"k-ES256"}`, `{"iss":"`+issA+`","exp":`+tt.exp+`}`)
			res, err := v.Verify(context.Background(), tok)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
			if err == nil && !res.ExpiresAt.Equal(tt.wantExp) {
				t.Errorf("ExpiresAt = %v, want %v", res.ExpiresAt, tt.wantExp)
			}
		})
	}
}

func TestClaimsPassThroughExactly(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	payload := `{ "iss" : "` + issA + `", "aud":["x","` + aud + `"], "exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) +
		`.000000001, "big":12345678901234567890123, "f":0.1000000000000000055511151231257827, "s":"caf\u00e9 \ud83d\ude00"}`
	res, err := v.Verify(context.Background(), signRaw(t, "ES256", `{"alg":"ES256","kid":"k-ES256"}`, payload))
	if err != nil {
		t.Fatalf("Verify() = %v, want nil", err)
	}
	if string(res.Claims) != payload {
		t.Errorf("Claims = %s, want %s", res.Claims, payload)
	}
	if !slices.Equal(res.Audience, []string{"x", aud}) {
		t.Errorf("Audience = %q, want [x %s]", res.Audience, aud)
	}
}

func TestEscapedNamesAreDecoded(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	// "\u0065xp" is "exp": an expired token cannot hide its exp.
	payload := `{"iss":"` + issA + `","aud":"` + aud + `","\u0065xp":` + fmt.Sprint(t0.Add(-time.Hour).Unix()) + `}`
	_, err := v.Verify(context.Background(), signRaw(t, "ES256", `{"\u0061lg":"ES256","kid":"k-ES256"}`, payload))
	if !errors.Is(err, verify.ErrExpired) {
		t.Fatalf("Verify() = %v, want %v", err, verify.ErrExpired)
	}
}

func TestRequiredClaims(t *testing.T) {
	keys := allKeys(t)
	tests := []struct {
		name     string
		required []string
		extra    map[string]any
		wantErr  error
	}{
		{"default-requires-exp", nil, map[string]any{"exp": nil}, verify.ErrMissingClaim},
		{"empty-requires-nothing", []string{}, map[string]any{"exp": nil}, nil},
		{"sub-present", []string{"sub"}, nil, nil},
		{"jti-absent", []string{"jti"}, nil, verify.ErrMissingClaim},
		{"custom-present", []string{"scope", "exp"}, map[string]any{"scope": "read"}, nil},
		{"custom-null-is-present", []string{"scope"}, map[string]any{"scope": []any{}}, nil},
		{"custom-absent", []string{"scope"}, nil, verify.ErrMissingClaim},
		{"exp-not-required-but-checked", []string{}, map[string]any{"exp": t0.Add(-time.Hour).Unix()}, verify.ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, RequiredClaims: tt.required}}})
			_, err := v.Verify(context.Background(), mint("EdDSA", "k-EdDSA", tt.extra))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestExtractClaims(t *testing.T) {
	keys := allKeys(t)
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{
		Issuer: issA, Keys: keys,
		ExtractClaims: []string{"sub", "scp", "n", "ok", "obj", "evil", "long", "mixed", "absent", "uni",
			"nul", "tab", "spaced", "del", "joined", "fits", "over", "c1", "inner"},
	}}})
	long := strings.Repeat("é", verify.MaxExtractedLen) // 2 bytes each
	fits := strings.Repeat("x", verify.MaxExtractedLen)
	over := fits + "x" // one byte over the bound
	payload := `{"iss":"` + issA + `","exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) + `,"sub":"alice",` +
		`"scp":["read", "write"],"n":1.50,"ok":true,"obj":{"a": [1, 2]},"evil":"a\r\nX-Admin: yes\u0000\u0085",` +
		`"long":"` + long + `","mixed":["a",1],"uni":"caf\u00e9",` +
		// Values that would need changing to become a header value are
		// sent empty: none of them may read as "admin" or "eng admin".
		`"nul":"ad\u0000min","tab":"admin\t","spaced":"  admin ","del":"ad\u007fmin","joined":["eng admin"],` +
		`"c1":"ad\u0085min","fits":"` + fits + `","over":"` + over + `","inner":"eng admin"}`
	res, err := v.Verify(context.Background(), signRaw(t, "EdDSA", `{"alg":"EdDSA","kid":"k-EdDSA"}`, payload))
	if err != nil {
		t.Fatalf("Verify() = %v, want nil", err)
	}
	want := map[string]string{
		"sub":    "alice",
		"scp":    "read write",
		"n":      "1.50",
		"ok":     "true",
		"obj":    `{"a":[1,2]}`,
		"evil":   "",
		"long":   "",
		"mixed":  `["a",1]`,
		"uni":    "café",
		"nul":    "",
		"tab":    "",
		"spaced": "",
		"del":    "",
		"joined": "",
		"c1":     "",
		"fits":   fits,
		"over":   "",
		"inner":  "eng admin",
	}
	for k, w := range want {
		if got := res.Extracted[k]; got != w {
			t.Errorf("Extracted[%q] = %q, want %q", k, got, w)
		}
	}
	if _, ok := res.Extracted["absent"]; ok || len(res.Extracted) != len(want) {
		t.Errorf("Extracted = %q, want exactly %d claims", res.Extracted, len(want))
	}
}

func TestKidlessTriesAtMostMaxKidless(t *testing.T) {
	// Twelve keys that fit ES256, none of which signed the token; one RSA key.
	var keys []*cache.Key
	for i := range 12 {
		keys = append(keys, newKey(t, testkeys.Public(testkeys.EC256B), cache.KeyMeta{Kid: fmt.Sprint("ec-", i)}))
	}
	keys = append(keys, keyFor(t, "RS256", "rsa"))
	for _, tt := range []struct {
		max, want int
	}{{0, verify.DefaultMaxKidless}, {3, 3}, {20, 12}} {
		t.Run(fmt.Sprint("max-", tt.max), func(t *testing.T) {
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keysOf(keys...)}}, MaxKidless: tt.max})
			attempts := 0
			verify.SetAttemptHook(v, func(k *cache.Key) {
				attempts++
				if k.Kty != "EC" {
					t.Errorf("tried a %s key for ES256", k.Kty)
				}
			})
			_, err := v.Verify(context.Background(), mint("ES256", "", map[string]any{"aud": nil}))
			if !errors.Is(err, verify.ErrBadSignature) {
				t.Fatalf("Verify() = %v, want %v", err, verify.ErrBadSignature)
			}
			if attempts != tt.want {
				t.Errorf("attempts = %d, want %d", attempts, tt.want)
			}
		})
	}
	// The signing key is found among the fitting keys.
	withSigner := append(slices.Clone(keys[:4]), keyFor(t, "ES256", "signer"))
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keysOf(withSigner...)}}})
	res, err := v.Verify(context.Background(), mint("ES256", "", map[string]any{"aud": nil}))
	if err != nil || res.Thumbprint != withSigner[4].Thumbprint {
		t.Fatalf("Verify() = %v, %v, want the signer's key", res, err)
	}
	// No fitting key at all.
	if _, err := v.Verify(context.Background(), mint("EdDSA", "", map[string]any{"aud": nil})); !errors.Is(err, verify.ErrAlgNotAllowed) {
		t.Fatalf("Verify(EdDSA) = %v, want %v", err, verify.ErrAlgNotAllowed)
	}
}

func TestUnknownKidRefresh(t *testing.T) {
	old := keyFor(t, "RS256", "old")
	fresh := keyFor(t, "RS256", "new")
	tests := []struct {
		name      string
		refresher func(*cache.Keys) *fakeRefresher
		missing   bool
		wantErr   error
		wantCalls int32
	}{
		{"refresh-finds-kid", func(k *cache.Keys) *fakeRefresher {
			return &fakeRefresher{keys: k, next: cache.NewSet([]*cache.Key{old, fresh}, nil, t0, time.Time{})}
		}, false, nil, 1},
		{"refresh-lacks-kid", func(k *cache.Keys) *fakeRefresher {
			return &fakeRefresher{keys: k, next: cache.NewSet([]*cache.Key{old}, nil, t0, time.Time{})}
		}, false, verify.ErrUnknownKid, 1},
		{"refresh-error", func(k *cache.Keys) *fakeRefresher {
			return &fakeRefresher{keys: k, err: errors.New("budget spent")}
		}, false, verify.ErrUnknownKid, 1},
		{"refresh-declined-but-kid-published", func(k *cache.Keys) *fakeRefresher {
			// A concurrent request's refresh published the kid and spent the budget.
			return &fakeRefresher{keys: k, next: cache.NewSet([]*cache.Key{old, fresh}, nil, t0, time.Time{}), err: errors.New("budget spent"), storeOnErr: true}
		}, false, nil, 1},
		{"recently-missing", func(k *cache.Keys) *fakeRefresher {
			return &fakeRefresher{keys: k, next: cache.NewSet([]*cache.Key{old, fresh}, nil, t0, time.Time{})}
		}, true, verify.ErrUnknownKid, 0},
		{"refresh-makes-set-stale", func(k *cache.Keys) *fakeRefresher {
			return &fakeRefresher{keys: k, next: cache.NewSet([]*cache.Key{old, fresh}, nil, t0, t0.Add(-time.Second))}
		}, false, verify.ErrKeysUnavailable, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := keysOf(old)
			if tt.missing {
				keys.RememberMissing("new", t0.Add(time.Minute))
			}
			r := tt.refresher(keys)
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, Refresher: r}}})
			_, err := v.Verify(context.Background(), mint("RS256", "new", map[string]any{"aud": nil}))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
			if got := r.calls.Load(); got != tt.wantCalls {
				t.Errorf("RefreshUnknownKid calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}
	t.Run("no-refresh-for-known-kid", func(t *testing.T) {
		keys := keysOf(old)
		r := &fakeRefresher{keys: keys, err: errors.New("must not be called")}
		v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, Refresher: r}}})
		if _, err := v.Verify(context.Background(), mint("RS256", "old", map[string]any{"aud": nil})); err != nil {
			t.Fatalf("Verify() = %v, want nil", err)
		}
		if r.calls.Load() != 0 {
			t.Errorf("RefreshUnknownKid calls = %d, want 0", r.calls.Load())
		}
	})
}

func TestNew(t *testing.T) {
	keys := allKeys(t)
	tests := []struct {
		name string
		opts verify.Options
		ok   bool
	}{
		{"no-issuers", verify.Options{}, false},
		{"no-keys", verify.Options{Issuers: []verify.Issuer{{Issuer: issA}}}, false},
		{"empty-issuer", verify.Options{Issuers: []verify.Issuer{{Keys: keys}}}, false},
		{"duplicate-issuer", verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys}, {Issuer: issA, Keys: keys}}}, false},
		{"skip-issuer-not-sole", verify.Options{Issuers: []verify.Issuer{{Keys: keys, SkipIssuerCheck: true}, {Issuer: issA, Keys: keys}}}, false},
		{"alg-none", verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, Algorithms: []string{"none"}}}}, false},
		{"alg-unknown", verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, Algorithms: []string{"rs256"}}}}, false},
		{"two-placeholders", verify.Options{Issuers: []verify.Issuer{{Issuer: "https://x/{tenantid}/{tenantid}", Keys: keys}}}, false},
		{"empty-audience", verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys, Audiences: []string{""}}}}, false},
		{"negative-max-token", verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys}}, MaxTokenBytes: -1}, false},
		{"negative-cache", verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys}}, TokenCache: verify.TokenCacheOptions{MaxEntries: -1}}, false},
		// JWT-SVID §2.1: RS*, PS* and ES* only.
		{"spiffe-eddsa", verify.Options{Issuers: []verify.Issuer{{TrustDomain: "example.org", Keys: keys, Audiences: []string{aud}, Algorithms: []string{"EdDSA"}}}}, false},
		{"spiffe-hs256", verify.Options{Issuers: []verify.Issuer{{TrustDomain: "example.org", Keys: keys, Audiences: []string{aud}, Algorithms: []string{"HS256"}}}}, false},
		{"spiffe-es256", verify.Options{Issuers: []verify.Issuer{{TrustDomain: "example.org", Keys: keys, Audiences: []string{aud}, Algorithms: []string{"ES256"}}}}, true},
		{"skip-issuer-sole", verify.Options{Issuers: []verify.Issuer{{Keys: keys, SkipIssuerCheck: true}}}, true},
		{"minimal", verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keys}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := verify.New(tt.opts)
			if (err == nil) != tt.ok || (v != nil) != tt.ok {
				t.Fatalf("New() = %v, %v, want ok=%v", v, err, tt.ok)
			}
		})
	}
}

func TestIssuersHaveDefaults(t *testing.T) {
	keys := allKeys(t)
	in := []verify.Issuer{{Issuer: issA, Keys: keys}, {Issuer: issB, Keys: keys, AllowHMAC: true, Leeway: -1, RequiredClaims: []string{}}}
	v := newVerifier(t, verify.Options{Issuers: in})
	got := v.Issuers()
	if len(got) != 2 {
		t.Fatalf("Issuers() has %d issuers, want 2", len(got))
	}
	asym := []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
	if !slices.Equal(got[0].Algorithms, asym) || got[0].Leeway != verify.DefaultLeeway || !slices.Equal(got[0].RequiredClaims, []string{"exp"}) {
		t.Errorf("Issuers()[0] = %+v, want the asymmetric algorithms, 30s leeway, exp required", got[0])
	}
	if !slices.Equal(got[1].Algorithms, append([]string{"HS256", "HS384", "HS512"}, asym...)) || got[1].Leeway != -1 || len(got[1].RequiredClaims) != 0 {
		t.Errorf("Issuers()[1] = %+v, want HMAC too, no leeway, nothing required", got[1])
	}
	if in[0].Algorithms != nil {
		t.Errorf("New() modified the caller's options")
	}
}

func TestExplain(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	steps, res, err := v.Explain(context.Background(), mint("ES256", "k-ES256", nil))
	if err != nil || res == nil {
		t.Fatalf("Explain() = %v, want a result", err)
	}
	var names []string
	for _, s := range steps {
		if !s.OK {
			t.Errorf("step %s failed: %s", s.Check, s.Detail)
		}
		names = append(names, s.Check)
	}
	want := []string{"size", "structure", "header", "crit", "issuer", "alg", "key", "signature", "kind", "exp", "nbf", "aud", "typ", "claims"}
	if !slices.Equal(names, want) {
		t.Errorf("Explain() steps = %v, want %v", names, want)
	}

	tok := mint("ES256", "k-ES256", map[string]any{"exp": t0.Add(-time.Hour).Unix()})
	steps, res, err = v.Explain(context.Background(), tok)
	if !errors.Is(err, verify.ErrExpired) || res != nil {
		t.Fatalf("Explain() = %v, %v, want %v", res, err, verify.ErrExpired)
	}
	last := steps[len(steps)-1]
	if last.Check != "exp" || last.OK || len(steps) != 10 {
		t.Errorf("Explain() last step = %+v of %d, want a failed exp, the 10th", last, len(steps))
	}
	for _, s := range steps {
		if strings.Contains(s.Detail, tok) || strings.Contains(s.Detail, strings.Split(tok, ".")[2]) {
			t.Errorf("step %s leaks the token", s.Check)
		}
	}
}

func TestErrorsNeverEchoTheToken(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	tok := mint("HS256", "k-HS256", map[string]any{"aud": "evil\r\nSet-Cookie: x", "iss": issA})
	_, err := v.Verify(context.Background(), tok)
	if !errors.Is(err, verify.ErrWrongAudience) {
		t.Fatalf("Verify() = %v, want %v", err, verify.ErrWrongAudience)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Contains(msg, strings.Split(tok, ".")[2]) || strings.Contains(msg, string(testkeys.Secret())) {
		t.Errorf("error %q carries a line break, the token or the secret", msg)
	}
}

func TestErrorDetailIsBounded(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	long := "https://" + strings.Repeat("é", 400) + ".example.com/"
	_, err := v.Verify(context.Background(), mint("ES256", "k-ES256", map[string]any{"iss": long}))
	if !errors.Is(err, verify.ErrWrongIssuer) {
		t.Fatalf("Verify() = %v, want %v", err, verify.ErrWrongIssuer)
	}
	if msg := err.Error(); len(msg) > 300 || !utf8.ValidString(msg) {
		t.Errorf("error of %d bytes (valid UTF-8: %v), want ≤ 300 bytes of UTF-8", len(msg), utf8.ValidString(msg))
	}
}

func TestMaxLifetime(t *testing.T) {
	is := issuerA(allKeys(t))
	is.MaxLifetime = time.Hour
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}})
	tests := []struct {
		name    string
		extra   map[string]any
		wantErr error
	}{
		{"at-the-bound", nil, nil},
		{"above", map[string]any{"exp": t0.Add(time.Hour + time.Second).Unix()}, verify.ErrLifetimeExceeded},
		{"no-iat-within", map[string]any{"iat": nil}, nil},
		{"no-iat-above", map[string]any{"iat": nil, "exp": t0.Add(2 * time.Hour).Unix()}, verify.ErrLifetimeExceeded},
		{"no-exp-not-required", map[string]any{"exp": nil}, verify.ErrMissingClaim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), mint("RS256", "k-RS256", tt.extra))
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("Verify() = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if err := verify.CheckOptions(verify.Options{Issuers: []verify.Issuer{{Issuer: issA, MaxLifetime: -1}}}); !errors.Is(err, verify.ErrInvalidOptions) {
		t.Errorf("CheckOptions(negative MaxLifetime) = %v, want ErrInvalidOptions", err)
	}
}
