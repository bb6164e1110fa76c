package verify_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/verify"
)

// TestJWTSVIDSpecRefusals: a SPIFFE issuer refuses what the JWT-SVID
// standard (standards/JWT-SVID.md) makes validators refuse, whatever the
// issuer's other keys say: an alg outside §2.1's table (EdDSA: "Validators
// receiving a token with the alg parameter set to a different value MUST
// reject the token"), a token without exp (§3.3: "validators MUST reject
// tokens without this claim"; an issuer's required_claims that leaves exp
// out must not turn that off, as audiences cannot be left out either), and
// a typ other than JWT or JOSE (§2.3; go-spiffe's jwtsvid.ParseAndValidate
// refuses it). The Ed25519 key comes from a real bundle file, parsed by
// jwks as serve parses it.
func TestJWTSVIDSpecRefusals(t *testing.T) {
	edPub := testkeys.Public(testkeys.Ed25519A).(ed25519.PublicKey)
	bundle := fmt.Sprintf(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":%q,"kid":"svid-ed","use":"jwt-svid"}],"spiffe_refresh_hint":300}`,
		base64.RawURLEncoding.EncodeToString(edPub))
	file := filepath.Join(t.TempDir(), "bundle.json")
	if err := os.WriteFile(file, []byte(bundle), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := jwks.Fetch(context.Background(), jwks.Options{File: file, TrustDomain: "example.org"})
	if err != nil || set.Len() != 1 {
		t.Fatalf("Fetch(bundle) = %v, %v; want the Ed25519 jwt-svid key", set, err)
	}
	ecKey := newKey(t, testkeys.Public(testkeys.EC256A), cache.KeyMeta{Kid: "svid-ec", Use: "jwt-svid"})
	keys := keysOf(append(set.Keys(), ecKey)...)

	aud := "spiffe://example.org/api"
	defaults := verify.Issuer{TrustDomain: "example.org", Keys: keys, Audiences: []string{aud}}
	// An operator who asks for jti as well, thinking the list adds to exp.
	withJTI := verify.Issuer{TrustDomain: "example.org", Keys: keys, Audiences: []string{aud}, RequiredClaims: []string{"jti"}}
	svid := func(extra map[string]any) map[string]any {
		c := map[string]any{"sub": "spiffe://example.org/ns/a/sa/b", "aud": aud, "exp": t0.Add(time.Hour).Unix(), "jti": "j1"}
		for k, v := range extra {
			if v == nil {
				delete(c, k)
				continue
			}
			c[k] = v
		}
		return c
	}
	ec := func(h, c map[string]any) string {
		hdr := map[string]any{"kid": "svid-ec"}
		for k, v := range h {
			hdr[k] = v
		}
		return testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A), hdr, c)
	}
	tests := []struct {
		name    string
		is      verify.Issuer
		token   string
		wantErr error
	}{
		{"es256-passes", defaults, ec(nil, svid(nil)), nil},
		{"typ-JWT-passes", defaults, ec(map[string]any{"typ": "JWT"}, svid(nil)), nil},
		{"typ-JOSE-passes", defaults, ec(map[string]any{"typ": "JOSE"}, svid(nil)), nil},
		{"no-typ-passes", defaults, ec(map[string]any{"typ": nil}, svid(nil)), nil},
		{"eddsa-not-a-jwt-svid-alg", defaults,
			testkeys.Mint("EdDSA", testkeys.Private(testkeys.Ed25519A), map[string]any{"kid": "svid-ed"}, svid(nil)), verify.ErrAlgNotAllowed},
		{"no-exp-with-required-jti", withJTI, ec(nil, svid(map[string]any{"exp": nil})), verify.ErrMissingClaim},
		{"typ-at+jwt", defaults, ec(map[string]any{"typ": "at+jwt"}, svid(nil)), verify.ErrWrongType},
		// go-spiffe compares typ exactly: "joſe" (U+017F) is no JOSE.
		{"typ-jose-long-s", defaults, ec(map[string]any{"typ": "JO\u017fE"}, svid(nil)), verify.ErrWrongType},
		{"typ-other", defaults, ec(map[string]any{"typ": "kubernetes"}, svid(nil)), verify.ErrWrongType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{tt.is}})
			res, err := v.Verify(context.Background(), tt.token)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify() = %+v, %v; want %v", res, err, tt.wantErr)
			}
		})
	}
	// --explain names every claim it required, exp included.
	steps, _, err := newVerifier(t, verify.Options{Issuers: []verify.Issuer{withJTI}}).Explain(context.Background(), ec(nil, svid(nil)))
	if err != nil {
		t.Fatalf("Explain() = %v", err)
	}
	if i := slices.IndexFunc(steps, func(s verify.Step) bool { return s.Check == "claims" }); i < 0 || !strings.Contains(steps[i].Detail, `"exp"`) {
		t.Errorf("Explain() steps = %+v; want the claims step to name exp", steps)
	}
	// The iss of a JWT-SVID is checked by nothing: what reads
	// Result.Issuer (Envoy's metadata, /v1/verify) gets the trust domain,
	// not a name another issuer has.
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{defaults}})
	for range 2 { // the second from the token cache
		res, err := v.Verify(context.Background(), ec(nil, svid(map[string]any{"iss": "https://login.example.com/"})))
		if err != nil || res.Issuer != "spiffe://example.org" {
			t.Fatalf("Verify(SVID with iss of another issuer) = %+v, %v; want Issuer spiffe://example.org", res, err)
		}
	}
}
