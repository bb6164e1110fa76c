package verify_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

func TestAlgorithmsIsTheTable(t *testing.T) {
	got := verify.Algorithms()
	if !slices.Equal(got, testkeys.Algorithms) {
		t.Fatalf("Algorithms() = %v, want %v", got, testkeys.Algorithms)
	}
	got[0] = "changed"
	if verify.Algorithms()[0] != testkeys.Algorithms[0] {
		t.Errorf("Algorithms() shares its slice")
	}
	for _, alg := range testkeys.Algorithms {
		if err := verify.CheckAlgorithm(alg); err != nil {
			t.Errorf("CheckAlgorithm(%s) = %v, want nil", alg, err)
		}
	}
}

func TestCheckAlgorithm(t *testing.T) {
	tests := []struct {
		name, alg, want string
	}{
		{"none", "none", `"none" is never accepted`},
		{"none-any-case", "NoNe", `"NoNe" is never accepted`},
		{"unknown", "RS1024", `unknown algorithm "RS1024" (known: HS256, HS384`},
		{"case-matters", "rs256", `unknown algorithm "rs256"`},
		{"empty", "", `unknown algorithm ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verify.CheckAlgorithm(tt.alg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckAlgorithm(%q) = %v, want %q", tt.alg, err, tt.want)
			}
			_, err = verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: keysOf(), Algorithms: []string{tt.alg}}}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(Algorithms: [%q]) = %v, want the CheckAlgorithm error", tt.alg, err)
			}
		})
	}
}

// TestMinHMACBytes checks the sizes and that the verifier applies them: a
// secret one byte shorter than an algorithm's minimum does not fit it.
func TestMinHMACBytes(t *testing.T) {
	want := map[string]int{"HS256": 32, "HS384": 48, "HS512": 64}
	for _, alg := range verify.Algorithms() {
		t.Run(alg, func(t *testing.T) {
			if got := verify.MinHMACBytes(alg); got != want[alg] {
				t.Fatalf("MinHMACBytes(%s) = %d, want %d", alg, got, want[alg])
			}
			min := want[alg]
			if min == 0 {
				return
			}
			for _, size := range []int{min - 1, min} {
				secret := testkeys.Secret()[:size]
				k, err := cache.NewKey(secret, cache.KeyMeta{Kid: "hs", Local: true})
				if err != nil {
					t.Fatal(err)
				}
				v, err := verify.New(verify.Options{Now: func() time.Time { return t0 }, Issuers: []verify.Issuer{{Issuer: issA, Keys: keysOf(k), AllowHMAC: true}}})
				if err != nil {
					t.Fatal(err)
				}
				tok := testkeys.Mint(alg, secret, map[string]any{"kid": "hs"}, claims(nil))
				_, err = v.Verify(context.Background(), tok)
				if size < min && !errors.Is(err, verify.ErrAlgNotAllowed) {
					t.Errorf("%s with a %d-byte secret: Verify() = %v, want %v", alg, size, err, verify.ErrAlgNotAllowed)
				}
				if size == min && err != nil {
					t.Errorf("%s with a %d-byte secret: Verify() = %v, want nil", alg, size, err)
				}
			}
		})
	}
	if got := verify.MinHMACBytes("HS1024"); got != 0 {
		t.Errorf("MinHMACBytes(HS1024) = %d, want 0", got)
	}
}
