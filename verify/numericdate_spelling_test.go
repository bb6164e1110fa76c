package verify_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestNumericDateSpellingsReadTheSame: one number written with a fraction,
// with an exponent, or as an integer mantissa scaled down is one instant,
// read exactly to the nanosecond (digits past the ninth dropped). Only the
// plain fraction was read exactly; the exponent forms went through a
// float64, which rounds 03:04:04.9999999999 up to 03:04:05 exactly: an iat
// that moved onto a revocation's issued_before (equal is not before), the
// very rounding decimalDate was written to avoid.
func TestNumericDateSpellingsReadTheSame(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(t), RequiredClaims: []string{}}}})
	want := time.Date(2030, 1, 2, 3, 4, 4, 999999999, time.UTC) // 1893553444.999999999
	for _, iat := range []string{
		"1893553444.9999999999",
		"1.8935534449999999999e9",
		"1.8935534449999999999E+9",
		"18935534449999999999e-10",
		"0.18935534449999999999e10",
		"189355344499.99999999e-2",
	} {
		t.Run(iat, func(t *testing.T) {
			tok := signRaw(t, "ES256", `{"alg":"ES256","kid":"k-ES256"}`, `{"iss":"`+issA+`","iat":`+iat+`}`)
			res, err := v.VerifyAt(context.Background(), tok, want.Add(time.Minute))
			if err != nil {
				t.Fatalf("Verify() = %v", err)
			}
			if !res.IssuedAt.Equal(want) {
				t.Errorf("IssuedAt = %s, want %s", res.IssuedAt.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
			}
		})
	}
}
