package verify_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestAmbiguousTokensAreMalformed: a member whose type no reader agrees on
// is malformed, never read some other way. A header alg, kid or typ that
// is not a string was read as the text between its first and last bytes
// ("kid":17 became the kid "", a token without kid, tried against every
// key); an aud array holding a number, a CR in the token (which base64
// decoders skip), and a cnf that does not decode (it would leave the token
// unbound) are refused the same way.
func TestAmbiguousTokensAreMalformed(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	valid := fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d}`, issA, aud, t0.Add(time.Hour).Unix())
	withClaim := func(member string) string {
		return strings.TrimSuffix(valid, "}") + "," + member + "}"
	}
	good := mint("RS256", "k-RS256", nil)
	parts := strings.Split(good, ".")
	tests := []struct {
		name  string
		token string
	}{
		{"alg-number", signRaw(t, "RS256", `{"alg":256,"kid":"k-RS256"}`, valid)},
		{"kid-number", signRaw(t, "RS256", `{"alg":"RS256","kid":17}`, valid)},
		{"kid-array", signRaw(t, "RS256", `{"alg":"RS256","kid":["k-RS256"]}`, valid)},
		{"typ-number", signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256","typ":10}`, valid)},
		{"aud-array-holding-a-number", signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`,
			fmt.Sprintf(`{"iss":%q,"aud":[%q,7],"exp":%d}`, issA, aud, t0.Add(time.Hour).Unix()))},
		{"carriage-return", parts[0] + "\r." + parts[1] + "." + parts[2]},
		{"cnf-string", signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, withClaim(`"cnf":"jkt"`))},
		{"cnf-null", signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, withClaim(`"cnf":null`))},
		{"cnf-array", signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, withClaim(`"cnf":[{"jkt":"a"}]`))},
		{"cnf-jkt-empty", signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, withClaim(`"cnf":{"jkt":""}`))},
		{"cnf-jkt-number", signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, withClaim(`"cnf":{"jkt":7}`))},
		{"cnf-x5t-empty", signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, withClaim(`"cnf":{"x5t#S256":""}`))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := v.Verify(context.Background(), tt.token); !errors.Is(err, verify.ErrMalformed) {
				t.Fatalf("Verify() = %v, want %v", err, verify.ErrMalformed)
			}
		})
	}
	if _, err := v.Verify(context.Background(), signRaw(t, "RS256", `{"alg":"RS256","kid":"k-RS256"}`, withClaim(`"cnf":{"jkt":"a"}`))); err != nil {
		t.Fatalf("Verify(cnf with a jkt) = %v, want nil (the control)", err)
	}
}

// TestTimeClaimsBeyondTheTimeRange: a NumericDate past what time.Unix holds
// (int64 seconds near its limit) is clamped to the end of year 9999, never
// wrapped around into the past, where an nbf or iat of the far future would
// pass and an exp would already have expired.
func TestTimeClaimsBeyondTheTimeRange(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	const maxInt64, minInt64 = "9223372036854775807", "-9223372036854775808"
	end := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	tests := []struct {
		name    string
		claim   string // member added to valid claims
		wantErr error
		wantExp time.Time
	}{
		{"nbf-int64-max", `"nbf":` + maxInt64, verify.ErrNotYetValid, time.Time{}},
		{"iat-int64-max", `"iat":` + maxInt64, verify.ErrNotYetValid, time.Time{}},
		{"nbf-int64-min", `"nbf":` + minInt64, nil, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%d,%s}`, issA, aud, t0.Add(time.Hour).Unix(), tt.claim)
			_, err := v.Verify(context.Background(), signRaw(t, "ES256", `{"alg":"ES256","kid":"k-ES256"}`, payload))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
		})
	}
	t.Run("exp-int64-max", func(t *testing.T) {
		payload := fmt.Sprintf(`{"iss":%q,"aud":%q,"exp":%s}`, issA, aud, maxInt64)
		res, err := v.Verify(context.Background(), signRaw(t, "ES256", `{"alg":"ES256","kid":"k-ES256"}`, payload))
		if err != nil {
			t.Fatalf("Verify() = %v, want nil", err)
		}
		if !res.ExpiresAt.Equal(end) {
			t.Errorf("ExpiresAt = %v, want %v", res.ExpiresAt, end)
		}
	})
}

// TestMaxTokenBytesIsInclusive: a token of exactly MaxTokenBytes passes the
// size check; one byte less of a limit refuses it.
func TestMaxTokenBytesIsInclusive(t *testing.T) {
	tok := mint("ES256", "k-ES256", nil)
	for _, tt := range []struct {
		name    string
		limit   int
		wantErr error
	}{
		{"at-the-limit", len(tok), nil},
		{"one-over", len(tok) - 1, verify.ErrTokenTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}, MaxTokenBytes: tt.limit})
			if _, err := v.Verify(context.Background(), tok); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestSharedCacheHoldsTheNewSizeLimit: a reload that lowers MaxTokenBytes
// keeps its issuers, and with them their cached verdicts, but a token over
// the new limit is token_too_large: the cache never answers it.
func TestSharedCacheHoldsTheNewSizeLimit(t *testing.T) {
	tc, err := verify.NewTokenCache(verify.TokenCacheOptions{MaxEntries: 100})
	if err != nil {
		t.Fatal(err)
	}
	v1 := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}, Cache: tc})
	tok := mint("ES256", "k-ES256", nil)
	if _, err := v1.Verify(context.Background(), tok); err != nil {
		t.Fatalf("v1.Verify() = %v, want nil", err)
	}
	v2 := newVerifier(t, verify.Options{Issuers: v1.Issuers(), Cache: tc, Previous: v1, MaxTokenBytes: len(tok) - 1})
	if _, err := v2.Verify(context.Background(), tok); !errors.Is(err, verify.ErrTokenTooLarge) {
		t.Fatalf("v2.Verify() = %v, want %v", err, verify.ErrTokenTooLarge)
	}
	if s := tc.Stats(); s.Hits != 0 {
		t.Errorf("Stats() = %+v, want no hit", s)
	}
}
