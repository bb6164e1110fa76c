package verify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/verify"
)

// TestIDTokenVerdictAcrossReload: a reload that changes id_token (azp mode,
// client IDs, or none) carries no ID-token verdict over.
func TestIDTokenVerdictAcrossReload(t *testing.T) {
	ctx := context.Background()
	keys := allKeys(t)
	tc, err := verify.NewTokenCache(verify.TokenCacheOptions{MaxEntries: 100})
	if err != nil {
		t.Fatal(err)
	}
	base := idIssuer(keys, verify.AZPOff)
	v1 := newVerifier(t, verify.Options{Issuers: []verify.Issuer{base}, Cache: tc})
	tok := mintID("ES256", nil, map[string]any{"aud": []string{clientID, "x"}, "azp": "mallory"})
	if _, err := v1.VerifyIDTokenAt(ctx, tok, t0, allInputs()); err != nil {
		t.Fatalf("v1: %v", err)
	}
	for _, tt := range []struct {
		name string
		is   verify.Issuer
		want error
	}{
		{"azp-always", func() verify.Issuer { i := base; i.IDToken.AZP = verify.AZPAlways; return i }(), verify.ErrWrongAZP},
		{"client-ids", func() verify.Issuer { i := base; i.IDToken.ClientIDs = []string{"other-app"}; return i }(), verify.ErrWrongAudience},
		{"no-id-tokens", func() verify.Issuer { i := base; i.IDToken = verify.IDTokenPolicy{}; return i }(), verify.ErrWrongType},
	} {
		v2 := newVerifier(t, verify.Options{Issuers: []verify.Issuer{tt.is}, Cache: tc, Previous: v1})
		if _, err := v2.VerifyIDTokenAt(ctx, tok, t0, allInputs()); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}
