package verify_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestIDTokenAuthTimeAhead: max_age asks that the End-User authenticated
// within it (OIDC Core 3.1.3.7 item 11). An auth_time ahead of now passed
// every max_age, 0 included, however far ahead: an IdP writing auth_time in
// milliseconds (a day-old login read as year 58 000) satisfied
// prompt=login-strength max_age for ever. As an iat ahead of now by more
// than the leeway is not_yet_valid, so is such an auth_time when max_age is
// given; within the leeway it passes.
func TestIDTokenAuthTimeAhead(t *testing.T) {
	ctx := context.Background()
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{idIssuer(allKeys(t), "")}, TokenCache: verify.TokenCacheOptions{MaxEntries: 16}})
	withMaxAge := func(d time.Duration) verify.IDTokenChecks {
		in := allInputs()
		in.MaxAge = d
		return in
	}
	tests := []struct {
		name     string
		authTime int64
		in       verify.IDTokenChecks
		wantErr  error
	}{
		{"an-hour-ahead", t0.Add(time.Hour).Unix(), allInputs(), verify.ErrNotYetValid},
		{"milliseconds-a-day-old", t0.Add(-24 * time.Hour).UnixMilli(), allInputs(), verify.ErrNotYetValid},
		{"max-age-zero-an-hour-ahead", t0.Add(time.Hour).Unix(), withMaxAge(0), verify.ErrNotYetValid},
		{"ahead-within-leeway", t0.Add(20 * time.Second).Unix(), withMaxAge(0), nil},
		{"a-minute-old", t0.Add(-time.Minute).Unix(), allInputs(), nil},
		{"ahead-without-max-age", t0.Add(time.Hour).Unix(), verify.IDTokenChecks{Nonce: idNonce}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := mintID("ES256", nil, map[string]any{"auth_time": tt.authTime})
			for range 2 { // the second is a cache hit where the first passed
				if _, err := v.VerifyIDTokenAt(ctx, tok, t0, tt.in); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Fatalf("VerifyIDTokenAt() = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}

// TestIDTokenMaxAgeNearDurationLimit: a MaxAge near time.Duration's range
// plus the issuer's leeway overflowed to a negative bound, and every ID
// token, authenticated a minute ago, was auth_too_old.
func TestIDTokenMaxAgeNearDurationLimit(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{idIssuer(allKeys(t), "")}})
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 10*time.Second} {
		in := allInputs()
		in.MaxAge = d
		if _, err := v.VerifyIDTokenAt(context.Background(), mintID("ES256", nil, nil), t0, in); err != nil {
			t.Errorf("MaxAge %d: VerifyIDTokenAt() = %v, want nil (auth_time a minute old)", d, err)
		}
	}
}

// TestIDTokenMaxAgeBoundary: an auth_time exactly max_age plus the leeway
// old passes, a second older is auth_too_old; a negative MaxAge is read as
// 0 (max_age=0 is prompt=login: auth_time within the leeway of now).
func TestIDTokenMaxAgeBoundary(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{idIssuer(allKeys(t), "")}})
	withMaxAge := func(d time.Duration) verify.IDTokenChecks {
		in := allInputs()
		in.MaxAge = d
		return in
	}
	tests := []struct {
		name     string
		authTime time.Time
		in       verify.IDTokenChecks
		wantErr  error
	}{
		{"max-age-plus-leeway-old", t0.Add(-5*time.Minute - verify.DefaultLeeway), withMaxAge(5 * time.Minute), nil},
		{"a-second-older", t0.Add(-5*time.Minute - verify.DefaultLeeway - time.Second), withMaxAge(5 * time.Minute), verify.ErrAuthTooOld},
		{"negative-max-age-now", t0, withMaxAge(-time.Hour), nil},
		{"negative-max-age-past-leeway", t0.Add(-verify.DefaultLeeway - time.Second), withMaxAge(-time.Hour), verify.ErrAuthTooOld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := mintID("ES256", nil, map[string]any{"auth_time": tt.authTime.Unix()})
			if _, err := v.VerifyIDTokenAt(context.Background(), tok, t0, tt.in); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("VerifyIDTokenAt() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
