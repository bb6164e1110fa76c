package verify_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestNumericDateLongSpellingsReadExactly: a NumericDate written with more
// than 800 digits and an exponent beyond ±400 is read as the number it is,
// as math/big, JavaScript and Python read it. It went through
// strconv.ParseFloat, which counts at most 800 digits before the point
// ("1" + 800 zeros + "e-790", 10^10, read as 10^9; with 2 000 zeros as
// 10^-191): an nbf or iat of year 2286 read as 2001 or 1970, so a token not
// yet valid passed, and an exp of the coming hour expired. A negative one
// (before 1970, accepted and clamped to year 1 as before) is read exactly
// too: -10^10 so spelled read as 1970.
func TestNumericDateLongSpellingsReadExactly(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}, MaxTokenBytes: verify.MaxMaxTokenBytes})
	zeros := strings.Repeat("0", 2000)
	exp := t0.Add(time.Hour).Unix()
	end := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	tests := []struct {
		name   string
		member string // replaces or adds to valid claims
		want   error
		field  func(*verify.Result) time.Time
		at     time.Time // the instant read, when want is nil
	}{
		{"nbf-801-digits", `"nbf":1` + zeros[:800] + `e-790`, verify.ErrNotYetValid, nil, time.Time{}},
		{"nbf-2001-digits", `"nbf":1` + zeros + `e-1990`, verify.ErrNotYetValid, nil, time.Time{}},
		{"nbf-digits-before-a-point", `"nbf":1` + zeros + `.5e-1990`, verify.ErrNotYetValid, nil, time.Time{}},
		{"iat-2001-digits", `"iat":1` + zeros + `e-1990`, verify.ErrNotYetValid, nil, time.Time{}},
		{"exp-2001-digits", fmt.Sprintf(`"exp":%d%se-2000`, exp, zeros), nil, func(r *verify.Result) time.Time { return r.ExpiresAt }, time.Unix(exp, 0)},
		{"exp-fraction-2001-digits", fmt.Sprintf(`"exp":%d%s.25e-2000`, exp, zeros), nil, func(r *verify.Result) time.Time { return r.ExpiresAt }, time.Unix(exp, 0)},
		{"exp-point-far-left", fmt.Sprintf(`"exp":0.%s%de2010`, zeros, exp), nil, func(r *verify.Result) time.Time { return r.ExpiresAt }, time.Unix(exp, 0)},
		{"exp-exponent-leading-zeros", fmt.Sprintf(`"exp":%d0e-0000000001`, exp), nil, func(r *verify.Result) time.Time { return r.ExpiresAt }, time.Unix(exp, 0)},
		{"exp-huge-exponent", `"exp":1e99999999999`, nil, func(r *verify.Result) time.Time { return r.ExpiresAt }, end},
		{"nbf-huge-negative-exponent", `"nbf":1` + zeros + `e-99999999999`, nil, func(r *verify.Result) time.Time { return r.NotBefore }, time.Unix(0, 0)},
		{"iat-negative-2001-digits", `"iat":-1` + zeros + `e-1990`, nil, func(r *verify.Result) time.Time { return r.IssuedAt }, time.Unix(-1e10, 0)},
		{"iat-negative-before-year-1", `"iat":-1` + zeros + `e-1988`, nil, func(r *verify.Result) time.Time { return r.IssuedAt }, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"iat-negative-fraction", `"iat":-1.5`, nil, func(r *verify.Result) time.Time { return r.IssuedAt }, time.Unix(-2, 5e8)},
		{"iat-below-a-nanosecond", `"iat":0.` + zeros + `1e1991`, nil, func(r *verify.Result) time.Time { return r.IssuedAt }, time.Unix(0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, value, _ := strings.Cut(tt.member, ":")
			claims := body(tt.member)
			if name == `"exp"` {
				claims = bodyWithout(`"exp"`, tt.member)
			}
			if tt.field != nil && tt.at.Unix() > 0 && tt.at.Before(end) {
				// The oracle: math/big reads the literal exactly (it
				// refuses the rows' exponents of eleven digits).
				r, ok := new(big.Rat).SetString(value)
				if !ok {
					t.Fatalf("big.Rat cannot read %.40s…", value)
				}
				sec, _ := new(big.Int).Quo(r.Num(), r.Denom()).Float64()
				if int64(sec) != tt.at.Unix() {
					t.Fatalf("the row's instant %d is not the literal's %d seconds", tt.at.Unix(), int64(sec))
				}
			}
			res, err := v.Verify(context.Background(), signRaw(t, "ES256", `{"alg":"ES256","kid":"k-ES256"}`, claims))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Verify() = %v, want %v", err, tt.want)
			}
			if tt.field != nil {
				if got := tt.field(res); !got.Equal(tt.at) {
					t.Errorf("read %s, want %s", got.Format(time.RFC3339Nano), tt.at.UTC().Format(time.RFC3339Nano))
				}
			}
		})
	}
}
