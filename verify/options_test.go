package verify_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// TestOptionBounds: New and CheckOptions accept each bound and refuse past
// it, naming the field first (the command maps it to the YAML key).
func TestOptionBounds(t *testing.T) {
	for _, tt := range []struct {
		name  string
		set   func(o *verify.Options)
		field string // "": accepted
	}{
		{"at-bounds", func(o *verify.Options) {
			o.MaxTokenBytes, o.TokenCache = verify.MaxMaxTokenBytes, verify.TokenCacheOptions{MaxEntries: verify.MaxCacheEntries, MaxBytes: verify.MaxCacheBytes}
			o.Issuers[0].Leeway = verify.MaxLeeway
		}, ""},
		{"at-lower-bounds", func(o *verify.Options) { o.MaxTokenBytes, o.Issuers[0].Leeway = verify.MinMaxTokenBytes, -1 }, ""},
		{"token-below", func(o *verify.Options) { o.MaxTokenBytes = verify.MinMaxTokenBytes - 1 }, "MaxTokenBytes: "},
		{"token-above", func(o *verify.Options) { o.MaxTokenBytes = verify.MaxMaxTokenBytes + 1 }, "MaxTokenBytes: "},
		{"token-negative", func(o *verify.Options) { o.MaxTokenBytes = -1 }, "MaxTokenBytes: "},
		{"kidless-negative", func(o *verify.Options) { o.MaxKidless = -1 }, "MaxKidless: "},
		{"cache-entries-above", func(o *verify.Options) { o.TokenCache.MaxEntries = verify.MaxCacheEntries + 1 }, "TokenCache.MaxEntries: "},
		{"cache-entries-negative", func(o *verify.Options) { o.TokenCache.MaxEntries = -1 }, "TokenCache.MaxEntries: "},
		{"cache-bytes-above", func(o *verify.Options) { o.TokenCache.MaxBytes = verify.MaxCacheBytes + 1 }, "TokenCache.MaxBytes: "},
		{"leeway-above", func(o *verify.Options) { o.Issuers[0].Leeway = verify.MaxLeeway + 1 }, "Issuers[0].Leeway: "},
		{"cross-check-rate-one", func(o *verify.Options) { o.CrossCheckRate = 1 }, ""},
		{"cross-check-rate-above", func(o *verify.Options) { o.CrossCheckRate = 1.01 }, "CrossCheckRate: "},
		{"cross-check-rate-nan", func(o *verify.Options) { o.CrossCheckRate = math.NaN() }, "CrossCheckRate: "},
		{"empty-audience", func(o *verify.Options) { o.Issuers[0].Audiences = []string{"api", ""} }, "Issuers[0].Audiences: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := verify.Options{Issuers: []verify.Issuer{issuerA(new(cache.Keys))}}
			tt.set(&o)
			err := verify.CheckOptions(o)
			_, newErr := verify.New(o)
			if tt.field == "" {
				if err != nil || newErr != nil {
					t.Fatalf("CheckOptions() = %v, New() = %v; want both nil", err, newErr)
				}
				return
			}
			if !errors.Is(err, verify.ErrInvalidOptions) || !strings.HasPrefix(strings.TrimPrefix(err.Error(), verify.ErrInvalidOptions.Error()+": "), tt.field) {
				t.Fatalf("CheckOptions() = %v, want %v naming %q first", err, verify.ErrInvalidOptions, tt.field)
			}
			if !errors.Is(newErr, verify.ErrInvalidOptions) {
				t.Fatalf("New() = %v, want %v", newErr, verify.ErrInvalidOptions)
			}
		})
	}
}
