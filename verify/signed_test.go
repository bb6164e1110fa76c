package verify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestVerifySigned: the signature, alg and issuer are judged, nothing
// else (no exp, aud, typ, required claim), and the token cache is neither
// read nor filled.
func TestVerifySigned(t *testing.T) {
	keys := keysOf(keyFor(t, "RS256", kidFor("RS256")), keyFor(t, "ES256", kidFor("ES256")))
	v := newVerifier(t, verify.Options{
		Issuers:    []verify.Issuer{{Issuer: issA, Keys: keys, Audiences: []string{aud}, Algorithms: []string{"RS256"}, Type: "at+jwt"}},
		TokenCache: verify.TokenCacheOptions{MaxEntries: 100},
	})
	ctx := context.Background()
	t.Run("other-kinds-rules-not-applied", func(t *testing.T) {
		tok := mint("RS256", kidFor("RS256"), map[string]any{"aud": "web-app", "exp": nil, "jti": "j", "iat": t0.Add(-time.Minute).Unix()})
		s, err := v.VerifySigned(ctx, tok, t0)
		if err != nil {
			t.Fatalf("VerifySigned() = %v", err)
		}
		if s.ConfiguredIssuer != issA || s.ID != "j" || len(s.Audience) != 1 || s.Audience[0] != "web-app" ||
			!s.HasIssuedAt || s.HasExpiresAt || s.Leeway != verify.DefaultLeeway || s.Alg != "RS256" || !s.TypeIs("jwt") || s.TypeIs("at+jwt") {
			t.Errorf("VerifySigned() = %+v", s)
		}
		if st := v.CacheStats(); st.Hits+st.Misses != 0 {
			t.Errorf("CacheStats() = %+v: VerifySigned used the token cache", st)
		}
		// The same token is still refused as an access token (no exp, aud).
		if _, err := v.Verify(ctx, tok); err == nil {
			t.Error("Verify() accepted it as an access token")
		}
	})
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"alg-not-allowed", mint("ES256", kidFor("ES256"), nil), verify.ErrAlgNotAllowed},
		{"unknown-kid", mint("RS256", "nope", nil), verify.ErrUnknownKid},
		{"bad-signature", mint("RS256", kidFor("RS256"), nil)[:len(mint("RS256", kidFor("RS256"), nil))-4] + "AAAA", verify.ErrBadSignature},
		{"unknown-issuer", mint("RS256", kidFor("RS256"), map[string]any{"iss": issB}), verify.ErrWrongIssuer},
		{"no-iss", mint("RS256", kidFor("RS256"), map[string]any{"iss": nil}), verify.ErrMissingClaim},
		{"alg-none", "eyJhbGciOiJub25lIn0.e30.", verify.ErrAlgNotAllowed},
		{"malformed", "a.b", verify.ErrMalformed},
		{"crit", signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256","crit":["x"]}`, `{"iss":"`+issA+`"}`), verify.ErrUnsupportedCrit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.VerifySigned(ctx, tt.token, t0)
			var e *verify.Error
			if !errors.Is(err, tt.want) || !errors.As(err, &e) {
				t.Fatalf("VerifySigned() = %v, want %v as a *verify.Error", err, tt.want)
			}
		})
	}
}
