package verify_test

import (
	"context"
	"testing"

	"github.com/jwksverify/jwksverify/verify"
)

// TestReloadRoutingChange: a reload that adds an exact issuer beside a
// {tenantid} template, or beside a SPIFFE trust domain, takes tokens the
// unchanged template or trust domain verified; their cached verdicts must
// not answer under the old issuer's rules. Each case's token verifies
// before the reload, and after it a verifier without the cache refuses it
// (wrong_audience): the shared cache must refuse it too.
func TestReloadRoutingChange(t *testing.T) {
	const issT1 = "https://login.example.com/t1/v2.0"
	const issX = "https://x.example.com/"
	for _, tt := range []struct {
		name   string
		before verify.Issuer
		added  verify.Issuer
		claims map[string]any
	}{
		{
			name:   "exact-beside-template",
			before: verify.Issuer{Issuer: "https://login.example.com/{tenantid}/v2.0", Audiences: []string{aud}},
			added:  verify.Issuer{Issuer: issT1, Audiences: []string{"api://other"}},
			claims: map[string]any{"iss": issT1, "tid": "t1"},
		},
		{
			name:   "exact-beside-trust-domain",
			before: verify.Issuer{TrustDomain: "example.org", Audiences: []string{aud}},
			added:  verify.Issuer{Issuer: issX, Audiences: []string{"api://other"}},
			claims: map[string]any{"iss": issX, "sub": "spiffe://example.org/w"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			tt.before.Keys, tt.added.Keys = allKeys(t), allKeys(t)
			tc, err := verify.NewTokenCache(verify.TokenCacheOptions{MaxEntries: 100})
			if err != nil {
				t.Fatal(err)
			}
			v1 := newVerifier(t, verify.Options{Issuers: []verify.Issuer{tt.before}, Cache: tc})
			tok := mint("ES256", kidFor("ES256"), tt.claims)
			if _, err := v1.Verify(ctx, tok); err != nil {
				t.Fatalf("before the reload: Verify = %v", err)
			}
			after := []verify.Issuer{tt.before, tt.added}
			if _, err := newVerifier(t, verify.Options{Issuers: after}).Verify(ctx, tok); err == nil {
				t.Fatal("after the reload, a verifier without the cache accepts the token: the case tests nothing")
			}
			v2 := newVerifier(t, verify.Options{Issuers: after, Cache: tc, Previous: v1})
			if res, err := v2.Verify(ctx, tok); err == nil {
				t.Errorf("after the reload the cached verdict answered (issuer %q); a fresh verification refuses the token", res.ConfiguredIssuer)
			}
		})
	}

	// A reload that reroutes nothing carries the unchanged issuer's
	// verdicts over: the token is a cache hit.
	is := verify.Issuer{Issuer: issX, Keys: allKeys(t), Audiences: []string{aud}}
	for _, tt := range []struct {
		name  string
		after []verify.Issuer
	}{
		{"unchanged", []verify.Issuer{is}},
		{"exact-beside-exact", []verify.Issuer{{Issuer: "https://y.example.com/", Keys: allKeys(t), Audiences: []string{aud}}, is}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := verify.NewTokenCache(verify.TokenCacheOptions{MaxEntries: 100})
			if err != nil {
				t.Fatal(err)
			}
			v1 := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, Cache: tc})
			tok := mint("ES256", kidFor("ES256"), map[string]any{"iss": issX})
			if _, err := v1.Verify(context.Background(), tok); err != nil {
				t.Fatal(err)
			}
			v2 := newVerifier(t, verify.Options{Issuers: tt.after, Cache: tc, Previous: v1})
			hits := tc.Stats().Hits
			if _, err := v2.Verify(context.Background(), tok); err != nil || tc.Stats().Hits != hits+1 {
				t.Errorf("after the reload: Verify = %v, hits %d → %d; want a cache hit", err, hits, tc.Stats().Hits)
			}
		})
	}
}
