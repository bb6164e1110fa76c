package verify_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// introspector returns a real introspect.Client for issuer whose endpoint
// answers active for the tokens in answers (token -> claims JSON, without
// active) and inactive for any other.
func introspector(t *testing.T, issuer string, answers map[string]string) *introspect.Client {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		a, ok := answers[r.PostForm.Get("token")]
		if !ok {
			io.WriteString(w, `{"active":false}`)
			return
		}
		io.WriteString(w, `{"active":true,`+a[1:])
	}))
	t.Cleanup(ts.Close)
	c, err := introspect.New(introspect.Options{Issuer: issuer, URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestOpaque(t *testing.T) {
	keys := keysOf(keyFor(t, "RS256", "k-RS256"))
	exp := t0.Add(time.Hour).Unix()
	answers := map[string]string{
		"ory_at_good.sig":    fmt.Sprintf(`{"iss":%q,"sub":"bob","aud":[%q],"scope":"read","exp":%d}`, issA, aud, exp),
		"no-iss":             fmt.Sprintf(`{"sub":"bob","aud":%q,"exp":%d}`, aud, exp),
		"other-iss":          fmt.Sprintf(`{"iss":"https://evil.example/","aud":%q,"exp":%d}`, aud, exp),
		"wrong-aud":          fmt.Sprintf(`{"aud":"api://other","exp":%d}`, exp),
		"expired":            fmt.Sprintf(`{"aud":%q,"exp":%d}`, aud, t0.Add(-time.Hour).Unix()),
		"no-exp":             fmt.Sprintf(`{"aud":%q}`, aud),
		"three.segments.tok": fmt.Sprintf(`{"aud":%q,"exp":%d}`, aud, exp),
		"nbf-string":         fmt.Sprintf(`{"aud":%q,"exp":%d,"nbf":"soon"}`, aud, exp),
		"hydra-refresh":      fmt.Sprintf(`{"aud":%q,"exp":%d,"sub":"bob","token_type":"Bearer","token_use":"refresh_token"}`, aud, exp),
		"hydra-access":       fmt.Sprintf(`{"aud":%q,"exp":%d,"sub":"bob","token_type":"Bearer","token_use":"access_token"}`, aud, exp),
		"keycloak-refresh":   fmt.Sprintf(`{"aud":%q,"exp":%d,"sub":"bob","typ":"Refresh"}`, aud, exp),
		"keycloak-offline":   fmt.Sprintf(`{"aud":%q,"exp":%d,"sub":"bob","typ":"Offline"}`, aud, exp),
		"keycloak-access":    fmt.Sprintf(`{"aud":%q,"exp":%d,"sub":"bob","typ":"Bearer"}`, aud, exp),
		"sub-number":         fmt.Sprintf(`{"aud":%q,"exp":%d,"sub":5}`, aud, exp),
		"duende-refresh":     fmt.Sprintf(`{"aud":%q,"exp":%d,"sub":"bob","token_type":"refresh_token"}`, aud, exp),
		"duende-access":      fmt.Sprintf(`{"aud":%q,"exp":%d,"sub":"bob","token_type":"access_token"}`, aud, exp),
	}
	a := issuerA(keys)
	a.Introspector = introspector(t, issA, answers)
	a.ExtractClaims = []string{"sub", "scope"}
	b := verify.Issuer{Issuer: issB, Keys: keys, Introspector: introspector(t, issB, nil)}
	plain := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(keys)}})
	one := newVerifier(t, verify.Options{Issuers: []verify.Issuer{a, {Issuer: "https://c.example.com/", Keys: keys}}, TokenCache: verify.TokenCacheOptions{MaxEntries: 10}})
	two := newVerifier(t, verify.Options{Issuers: []verify.Issuer{a, b}})

	tests := []struct {
		name    string
		v       *verify.Verifier
		token   string
		among   []string
		wantErr error
		wantSub string
	}{
		{"active", one, "ory_at_good.sig", nil, nil, "bob"},
		{"active-twice-cached", one, "ory_at_good.sig", nil, nil, "bob"},
		{"no-iss-is-the-issuer", one, "no-iss", nil, nil, "bob"},
		{"inactive", one, "revoked", nil, verify.ErrInactive, ""},
		{"answer-of-another-issuer", one, "other-iss", nil, verify.ErrWrongIssuer, ""},
		{"wrong-audience", one, "wrong-aud", nil, verify.ErrWrongAudience, ""},
		{"expired-answer", one, "expired", nil, verify.ErrExpired, ""},
		{"exp-required", one, "no-exp", nil, verify.ErrMissingClaim, ""},
		// A registered claim of the wrong type in the server's answer is the
		// server's fault, as an exp of the wrong type is (introspect.Decode):
		// could not decide (503), not a malformed token (401).
		{"answer-nbf-not-a-number", one, "nbf-string", nil, verify.ErrKeysUnavailable, ""},
		// Hydra and Keycloak answer active for a refresh token too, and say
		// which kind it is: a refresh token is not a credential for an API.
		{"hydra-refresh-token", one, "hydra-refresh", nil, verify.ErrWrongType, ""},
		{"hydra-access-token", one, "hydra-access", nil, nil, "bob"},
		{"keycloak-refresh-token", one, "keycloak-refresh", nil, verify.ErrWrongType, ""},
		{"keycloak-offline-token", one, "keycloak-offline", nil, verify.ErrWrongType, ""},
		{"keycloak-access-token", one, "keycloak-access", nil, nil, "bob"},
		// Duende IdentityServer (7.1 and later) answers a refresh token to
		// the client that requested it, with token_type refresh_token.
		{"duende-refresh-token", one, "duende-refresh", nil, verify.ErrWrongType, ""},
		{"duende-access-token", one, "duende-access", nil, nil, "bob"},
		{"answer-sub-not-a-string", one, "sub-number", nil, verify.ErrKeysUnavailable, ""},
		{"three-segments-not-jws", one, "three.segments.tok", nil, nil, ""},
		{"jwt-stays-local", one, mint("RS256", "k-RS256", nil), nil, nil, "alice"},
		{"two-introspectors", two, "ory_at_good.sig", nil, verify.ErrUnknownIssuer, ""},
		{"policy-narrows-to-one", two, "ory_at_good.sig", []string{issA}, nil, "bob"},
		{"policy-narrows-to-none", one, "ory_at_good.sig", []string{"https://c.example.com/"}, verify.ErrUnknownIssuer, ""},
		{"no-introspection-malformed", plain, "ory_at_good.sig", nil, verify.ErrMalformed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.v.VerifyAmong(context.Background(), tt.token, t0, tt.among)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("VerifyAmong() = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				var ve *verify.Error
				if !errors.As(err, &ve) || ve.Class == "" {
					t.Fatalf("VerifyAmong() = %v, want a *verify.Error with a class", err)
				}
				// The text reaches callers: it never names the configuration.
				if msg := err.Error(); strings.Contains(msg, issA) || strings.Contains(msg, aud) {
					t.Errorf("error %q names the configured issuer or audience", msg)
				}
				return
			}
			if tt.wantSub != "" && res.Subject != tt.wantSub {
				t.Errorf("Subject = %q, want %q", res.Subject, tt.wantSub)
			}
			if res.ConfiguredIssuer != issA {
				t.Errorf("ConfiguredIssuer = %q, want %q", res.ConfiguredIssuer, issA)
			}
			if res.Opaque != !strings.HasPrefix(tt.token, "eyJ") {
				t.Errorf("Opaque = %v for %s", res.Opaque, tt.name)
			}
			if tt.name == "active" && (res.Extracted["scope"] != "read" || !strings.Contains(string(res.Claims), `"client_id"`) == strings.Contains(string(res.Claims), `"active"`)) {
				t.Errorf("Result = %+v, want scope extracted and no active member", res)
			}
		})
	}
}

func TestSPIFFE(t *testing.T) {
	svidKey := newKey(t, testkeys.Public(testkeys.EC256A), cache.KeyMeta{Kid: "svid-1", Use: "jwt-svid"})
	td := verify.Issuer{TrustDomain: "example.org", Keys: keysOf(svidKey), Audiences: []string{"spiffe://example.org/api"}}
	other := verify.Issuer{TrustDomain: "other.org", Keys: keysOf(newKey(t, testkeys.Public(testkeys.EC256B), cache.KeyMeta{Kid: "svid-o", Use: "jwt-svid"})), Audiences: []string{"spiffe://example.org/api"}}
	// A normal issuer that (by misconfiguration) holds the bundle's key.
	normal := verify.Issuer{Issuer: issA, Keys: keysOf(svidKey), Audiences: []string{aud}}
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{td, other, normal}})
	es := func(kid string, c map[string]any) string {
		return testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A), map[string]any{"kid": kid}, c)
	}
	svid := func(extra map[string]any) map[string]any {
		c := map[string]any{"sub": "spiffe://example.org/ns/a/sa/b", "aud": "spiffe://example.org/api", "exp": t0.Add(time.Hour).Unix(), "iss": nil}
		for k, val := range extra {
			c[k] = val
		}
		for k, val := range c {
			if val == nil {
				delete(c, k)
			}
		}
		return c
	}
	tests := []struct {
		name    string
		token   string
		wantErr error
		wantIss string
	}{
		{"svid-no-iss", es("svid-1", svid(nil)), nil, "spiffe://example.org"},
		{"svid-unknown-iss", es("svid-1", svid(map[string]any{"iss": "https://spire.example.org"})), nil, "spiffe://example.org"},
		{"svid-needs-aud", es("svid-1", svid(map[string]any{"aud": nil})), verify.ErrMissingClaim, ""},
		{"svid-wrong-aud", es("svid-1", svid(map[string]any{"aud": "spiffe://example.org/other"})), verify.ErrWrongAudience, ""},
		{"other-trust-domain-key", es("svid-1", svid(map[string]any{"sub": "spiffe://other.org/w"})), verify.ErrUnknownKid, ""},
		{"unconfigured-trust-domain", es("svid-1", svid(map[string]any{"sub": "spiffe://third.org/w"})), verify.ErrMissingClaim, ""},
		{"trust-domain-itself-not-a-workload", es("svid-1", svid(map[string]any{"sub": "spiffe://example.org"})), verify.ErrMissingClaim, ""},
		{"iss-of-td-sub-of-other", es("svid-1", svid(map[string]any{"iss": "spiffe://example.org", "sub": "spiffe://other.org/w"})), verify.ErrWrongIssuer, ""},
		// Routed by its iss, a token still names a workload in sub: the
		// trust domain's own ID is none.
		{"iss-of-td-sub-is-td-itself", es("svid-1", svid(map[string]any{"iss": "spiffe://example.org", "sub": "spiffe://example.org"})), verify.ErrWrongIssuer, ""},
		{"bundle-key-never-for-normal-issuer", es("svid-1", claims(nil)), verify.ErrAlgNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := v.Verify(context.Background(), tt.token)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
			if err == nil && res.ConfiguredIssuer != tt.wantIss {
				t.Errorf("ConfiguredIssuer = %q, want %q", res.ConfiguredIssuer, tt.wantIss)
			}
		})
	}
	if _, err := verify.New(verify.Options{Issuers: []verify.Issuer{{TrustDomain: "example.org", Keys: keysOf(svidKey)}}}); err == nil {
		t.Error("New() accepted a SPIFFE issuer without Audiences")
	}
}

// FuzzSPIFFERoute: whatever the sub, a token routes to a SPIFFE issuer only
// when its sub is a SPIFFE ID of that trust domain, and a bundle key never
// verifies a token routed to the normal issuer.
func FuzzSPIFFERoute(f *testing.F) {
	for _, s := range []string{"spiffe://example.org/w", "spiffe://EXAMPLE.org/w", "spiffe://example.org", "spiffe://example.org/../x", "spiffe://example.org:80/w", "spiffe://example.org/w?x", "alice", "spiffe://other.org/w"} {
		f.Add(s, "")
		f.Add(s, issA)
	}
	svidKey := newKey(f, testkeys.Public(testkeys.EC256A), cache.KeyMeta{Kid: "svid-1", Use: "jwt-svid"})
	td := verify.Issuer{TrustDomain: "example.org", Keys: keysOf(svidKey), Audiences: []string{"a"}, RequiredClaims: []string{}}
	normal := verify.Issuer{Issuer: issA, Keys: keysOf(svidKey), RequiredClaims: []string{}}
	v := newVerifier(f, verify.Options{Issuers: []verify.Issuer{td, normal}})
	f.Fuzz(func(t *testing.T, sub, iss string) {
		c := map[string]any{"sub": sub, "aud": "a"}
		if iss != "" {
			c["iss"] = iss
		}
		tok := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A), map[string]any{"kid": "svid-1"}, c)
		res, err := v.Verify(context.Background(), tok)
		if err != nil {
			return
		}
		if res.ConfiguredIssuer != "spiffe://example.org" {
			t.Fatalf("a bundle key verified a token of issuer %q (sub %q, iss %q)", res.ConfiguredIssuer, sub, iss)
		}
		if !strings.HasPrefix(sub, "spiffe://example.org/") {
			t.Fatalf("sub %q routed to trust domain example.org", sub)
		}
	})
}
