package verify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/verify"
)

// TestIDTokenNeverAnAccessTokenWithoutAudiences: an issuer configured as
// SPEC's example is (id_token.client_ids, no audiences: aud unchecked for
// access tokens) accepted each of its ID tokens as an access token — at
// forward-auth, gRPC, /introspect, batches and Middleware, which "only
// accept access tokens". A token whose aud names one of the issuer's
// client IDs, where no audiences are configured, is an ID token there:
// wrong_type. An access token of another audience still passes, and a
// client ID the operator also lists in audiences stays an access token's
// audience (TestTokenKinds/plain).
func TestIDTokenNeverAnAccessTokenWithoutAudiences(t *testing.T) {
	ctx := context.Background()
	is := idIssuer(allKeys(t), "")
	is.Audiences = nil
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, TokenCache: verify.TokenCacheOptions{MaxEntries: 16}})
	tests := []struct {
		name    string
		extra   map[string]any
		wantErr error
	}{
		{"id-token", nil, verify.ErrWrongType},
		{"id-token-other-client", map[string]any{"aud": "other-app"}, verify.ErrWrongType},
		{"id-token-several-audiences", map[string]any{"aud": []string{"api://orders", clientID}, "azp": clientID}, verify.ErrWrongType},
		{"access-token-of-an-api", map[string]any{"aud": "api://orders"}, nil},
		{"access-token-without-aud", map[string]any{"aud": nil}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := mintID("ES256", nil, tt.extra)
			for range 2 { // the second may be a cache hit
				if _, err := v.VerifyAt(ctx, tok, t0); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Fatalf("VerifyAt() = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
	// The same token is still an ID token where one is asked for.
	if _, err := v.VerifyIDTokenAt(ctx, mintID("ES256", nil, nil), t0, allInputs()); err != nil {
		t.Fatalf("VerifyIDTokenAt() = %v, want nil", err)
	}
}

// TestIDTokenNeverAnAccessTokenBesideAudiences: an ID token may hold
// several audiences (OIDC Core 2, 3.1.3.7 items 3–5: that is what azp is
// for), among them the API's. With the API in audiences, such an ID token
// passed every access-token front end, while the same token was wrong_type
// when no audiences were configured: configuring audiences made the kinds
// mix again. An aud naming a client ID the operator does not also list in
// audiences is an ID token wherever an access token is asked for.
func TestIDTokenNeverAnAccessTokenBesideAudiences(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		audiences []string
		extra     map[string]any
		wantErr   error
	}{
		{"id-token-api-and-client", []string{aud}, map[string]any{"aud": []string{aud, clientID}, "azp": clientID}, verify.ErrWrongType},
		{"id-token-client-and-api", []string{aud}, map[string]any{"aud": []string{clientID, aud}, "azp": clientID}, verify.ErrWrongType},
		{"id-token-api-and-other-client", []string{aud}, map[string]any{"aud": []string{aud, "other-app"}, "azp": "other-app"}, verify.ErrWrongType},
		{"id-token-of-the-client-only", []string{aud}, nil, verify.ErrWrongAudience},
		{"access-token-of-the-api", []string{aud}, map[string]any{"aud": aud}, nil},
		{"access-token-of-two-apis", []string{aud}, map[string]any{"aud": []string{aud, "api://billing"}}, nil},
		{"client-also-an-audience", []string{aud, clientID}, map[string]any{"aud": []string{aud, clientID}, "azp": clientID}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := idIssuer(allKeys(t), "")
			is.Audiences = tt.audiences
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, TokenCache: verify.TokenCacheOptions{MaxEntries: 16}})
			tok := mintID("ES256", nil, tt.extra)
			for range 2 { // the second may be a cache hit
				if _, err := v.VerifyAt(ctx, tok, t0); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Fatalf("VerifyAt() = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}
