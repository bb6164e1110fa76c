package verify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/verify"
)

// TestSharedCacheAcrossReload: a verifier built with Previous over the
// same TokenCache answers the cached verdicts of the issuers it carries
// over, never those of an issuer it changed or removed, and Keep drops
// the latter; the previous verifier keeps working as it was.
func TestSharedCacheAcrossReload(t *testing.T) {
	keysA, keysB := allKeys(t), allKeys(t)
	tc, err := verify.NewTokenCache(verify.TokenCacheOptions{MaxEntries: 100})
	if err != nil {
		t.Fatal(err)
	}
	isB := verify.Issuer{Issuer: issB, Keys: keysB, Audiences: []string{"api://b1"}}
	v1 := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(keysA), isB}, Cache: tc})
	tokA := mint("ES256", kidFor("ES256"), nil)
	tokB := mint("ES256", kidFor("ES256"), map[string]any{"iss": issB, "aud": "api://b1"})
	ctx := context.Background()
	for _, tok := range []string{tokA, tokB} {
		if _, err := v1.Verify(ctx, tok); err != nil {
			t.Fatalf("v1.Verify() = %v", err)
		}
	}
	if s := tc.Stats(); s.Entries != 2 {
		t.Fatalf("entries = %d, want 2", s.Entries)
	}

	tests := []struct {
		name    string
		issuers []verify.Issuer
		wantB   error // tokB's verdict under the new verifier
	}{
		{"unchanged", []verify.Issuer{issuerA(keysA), isB}, nil},
		{"audience-changed", []verify.Issuer{issuerA(keysA), {Issuer: issB, Keys: keysB, Audiences: []string{"api://b2"}}}, verify.ErrWrongAudience},
		{"keys-changed", []verify.Issuer{issuerA(keysA), {Issuer: issB, Keys: allKeys(t), Audiences: []string{"api://b1"}}}, nil},
		{"removed", []verify.Issuer{issuerA(keysA)}, verify.ErrWrongIssuer}, // a sole issuer names the mismatch
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v2 := newVerifier(t, verify.Options{Issuers: tt.issuers, Cache: tc, Previous: v1})
			hits := tc.Stats().Hits
			if _, err := v2.Verify(ctx, tokA); err != nil {
				t.Fatalf("v2.Verify(A) = %v", err)
			}
			if got := tc.Stats().Hits - hits; got != 1 {
				t.Errorf("v2.Verify(A): %d cache hits, want 1 (the unchanged issuer's verdict carried over)", got)
			}
			hits = tc.Stats().Hits
			_, err := v2.Verify(ctx, tokB)
			if !errors.Is(err, tt.wantB) || (tt.wantB == nil && err != nil) {
				t.Errorf("v2.Verify(B) = %v, want %v", err, tt.wantB)
			}
			if tt.name != "unchanged" && tc.Stats().Hits != hits {
				t.Errorf("v2.Verify(B) answered from the cache although B changed")
			}
			// The old verifier still decides as it did.
			if _, err := v1.Verify(ctx, tokB); err != nil {
				t.Errorf("v1.Verify(B) after the reload = %v, want nil", err)
			}
			tc.Keep(v2)
			if _, err := v1.Verify(ctx, tokB); err != nil { // refill B's entry for the next case
				t.Fatal(err)
			}
		})
	}
}

// TestCarryOverOnlyEqualIssuers: Previous carries an issuer over only when
// every setting is equal.
func TestCarryOverOnlyEqualIssuers(t *testing.T) {
	keys := allKeys(t)
	base := issuerA(keys)
	tests := []struct {
		name   string
		change func(*verify.Issuer)
		same   bool
	}{
		{"equal", func(*verify.Issuer) {}, true},
		{"audience", func(is *verify.Issuer) { is.Audiences = []string{"api://other"} }, false},
		{"algorithms", func(is *verify.Issuer) { is.Algorithms = []string{"ES256"} }, false},
		{"leeway", func(is *verify.Issuer) { is.Leeway = 1 }, false},
		{"required-claims", func(is *verify.Issuer) { is.RequiredClaims = []string{"exp", "sub"} }, false},
		{"type", func(is *verify.Issuer) { is.Type = "at+jwt" }, false},
		{"extract", func(is *verify.Issuer) { is.ExtractClaims = []string{"sub"} }, false},
		{"keys", func(is *verify.Issuer) { is.Keys = allKeys(t) }, false},
	}
	tc, err := verify.NewTokenCache(verify.TokenCacheOptions{MaxEntries: 10})
	if err != nil {
		t.Fatal(err)
	}
	tok := mint("ES256", kidFor("ES256"), nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v1 := newVerifier(t, verify.Options{Issuers: []verify.Issuer{base}, Cache: tc})
			if _, err := v1.Verify(context.Background(), tok); err != nil {
				t.Fatal(err)
			}
			next := base
			tt.change(&next)
			v2 := newVerifier(t, verify.Options{Issuers: []verify.Issuer{next}, Cache: tc, Previous: v1})
			hits := tc.Stats().Hits
			_, _ = v2.Verify(context.Background(), tok)
			if got := tc.Stats().Hits > hits; got != tt.same {
				t.Errorf("cached verdict answered = %v, want %v", got, tt.same)
			}
		})
	}
}
