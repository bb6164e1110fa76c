package verify_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestErrorCarriesIssuerAndKid checks the typed answer of a rejection: the
// configured issuer the token names (never its raw iss), its kid, its class,
// and that errors.Is still matches the class and the family through it.
func TestErrorCarriesIssuerAndKid(t *testing.T) {
	const tmpl = "https://login.example.com/{tenantid}/v2.0"
	keys := allKeys(t)
	two := newVerifier(t, verify.Options{Issuers: []verify.Issuer{
		issuerA(keys),
		{Issuer: issB, Keys: &cache.Keys{}},
		{Issuer: tmpl, Keys: keys},
	}, MaxTokenBytes: 4096})
	rs := func(extra map[string]any) string { return mint("RS256", "k-RS256", extra) }
	tests := []struct {
		name       string
		token      string
		wantErr    error
		wantIssuer string
		wantKid    string
	}{
		{"too-large", strings.Repeat("a", 4097), verify.ErrTokenTooLarge, "", ""},
		{"not-a-jwt", "garbage", verify.ErrMalformed, "", ""},
		{"alg-none-names-its-issuer", signRaw(t, "HS256", `{"alg":"none","kid":"k0"}`, `{"iss":"`+issA+`"}`), verify.ErrAlgNotAllowed, issA, "k0"},
		{"crit-names-its-issuer", testkeys.Mint("RS256", testkeys.SigningKey("RS256"), map[string]any{"kid": "k-RS256", "crit": []string{"exp"}}, claims(nil)), verify.ErrUnsupportedCrit, issA, "k-RS256"},
		{"unknown-issuer", rs(map[string]any{"iss": "https://evil.example.net/"}), verify.ErrUnknownIssuer, "", "k-RS256"},
		{"no-iss", rs(map[string]any{"iss": nil}), verify.ErrMissingClaim, "", "k-RS256"},
		{"template-tid-mismatch", rs(map[string]any{"iss": "https://login.example.com/t1/v2.0", "tid": "t2"}), verify.ErrWrongIssuer, tmpl, "k-RS256"},
		{"template-routed", mint("RS256", "k-nope", map[string]any{"iss": "https://login.example.com/t1/v2.0", "tid": "t1"}), verify.ErrUnknownKid, tmpl, "k-nope"},
		{"unknown-kid", mint("RS256", "k-nope", nil), verify.ErrUnknownKid, issA, "k-nope"},
		{"expired", rs(map[string]any{"exp": t0.Add(-time.Hour).Unix()}), verify.ErrExpired, issA, "k-RS256"},
		{"no-kid", mint("RS256", "", map[string]any{"aud": "api://other"}), verify.ErrWrongAudience, issA, ""},
		{"keys-unavailable", rs(map[string]any{"iss": issB}), verify.ErrKeysUnavailable, issB, "k-RS256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := two.Verify(context.Background(), tt.token)
			var e *verify.Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify() = %T %v, want a *verify.Error", err, err)
			}
			if e.Class != verify.Class(tt.wantErr) || verify.Class(err) != e.Class {
				t.Errorf("Class = %q, Class(err) = %q; want %q", e.Class, verify.Class(err), verify.Class(tt.wantErr))
			}
			if e.Issuer != tt.wantIssuer || e.Kid != tt.wantKid {
				t.Errorf("Issuer, Kid = %q, %q; want %q, %q", e.Issuer, e.Kid, tt.wantIssuer, tt.wantKid)
			}
			family := verify.ErrRejected
			if tt.wantErr == verify.ErrKeysUnavailable {
				family = verify.ErrUnavailable
			}
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, family) {
				t.Errorf("Verify() = %v, want it to match %v and %v", err, tt.wantErr, family)
			}
			if err.Error() != e.Err.Error() || errors.Unwrap(err) != e.Err {
				t.Errorf("Error() = %q, Unwrap() = %v; want the detail %q", err.Error(), errors.Unwrap(err), e.Err)
			}
			// Explain answers the same.
			_, _, xerr := two.Explain(context.Background(), tt.token)
			var xe *verify.Error
			if !errors.As(xerr, &xe) || xe.Class != e.Class || xe.Issuer != e.Issuer || xe.Kid != e.Kid {
				t.Errorf("Explain() = %v, want the same *verify.Error as Verify", xerr)
			}
		})
	}
}

// TestVerifyAtJudgesAtTheGivenInstant: VerifyAt and ExplainAt ignore the
// verifier's clock and judge exp, nbf and the key set's staleness at the
// instant given, token cache included.
func TestVerifyAtJudgesAtTheGivenInstant(t *testing.T) {
	keys := &cache.Keys{}
	keys.Store(cache.NewSet([]*cache.Key{keyFor(t, "RS256", "k-RS256")}, nil, t0, t0.Add(2*time.Hour)))
	clockCalls := 0
	v, err := verify.New(verify.Options{
		Issuers:    []verify.Issuer{{Issuer: issA, Keys: keys, Audiences: []string{aud}}},
		Now:        func() time.Time { clockCalls++; return t0 },
		TokenCache: verify.TokenCacheOptions{MaxEntries: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	tok := mint("RS256", "k-RS256", map[string]any{"nbf": t0.Add(10 * time.Minute).Unix()}) // exp t0+1h
	tests := []struct {
		name    string
		at      time.Time
		wantErr error
	}{
		{"before-nbf", t0, verify.ErrNotYetValid},
		{"valid", t0.Add(30 * time.Minute), nil},
		{"valid-cached", t0.Add(40 * time.Minute), nil},
		{"expired-cached", t0.Add(2 * time.Hour).Add(-time.Second), verify.ErrExpired},
		{"keys-stale", t0.Add(3 * time.Hour), verify.ErrKeysUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.VerifyAt(context.Background(), tok, tt.at)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("VerifyAt(%s) = %v, want %v", tt.at.Format(time.TimeOnly), err, tt.wantErr)
			}
			_, _, err = v.ExplainAt(context.Background(), tok, tt.at)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("ExplainAt(%s) = %v, want %v", tt.at.Format(time.TimeOnly), err, tt.wantErr)
			}
		})
	}
	if clockCalls != 0 {
		t.Errorf("VerifyAt and ExplainAt read the verifier's clock %d times, want 0", clockCalls)
	}
}
