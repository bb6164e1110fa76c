package tokenid

import (
	"crypto/fips140"
	"strings"
	"testing"
)

func TestHasher(t *testing.T) {
	tok := "eyJhbGciOiJIUzI1NiJ9." + strings.Repeat("x", 300) + ".sig"
	altered := tok[:len(tok)-1] + "A"
	for _, tt := range []struct {
		name     string
		useGMAC  bool
		wantGMAC bool
	}{
		// GODEBUG=fips140=only refuses GCM with a chosen nonce: SHA-256.
		{"gmac", true, !fips140.Enforced()},
		{"sha256", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ids := New(tt.useGMAC)
			if got := ids.GMAC(); got != tt.wantGMAC {
				t.Fatalf("New(%v).GMAC() = %v, want %v", tt.useGMAC, got, tt.wantGMAC)
			}
			a, b := ids.Of(tok), ids.Of(tok)
			if a != b || a == (ID{}) {
				t.Errorf("Of(token) twice = %x, %x; want the same non-zero identity", a, b)
			}
			for _, other := range []string{altered, tok + ".", tok[:len(tok)-1], ""} {
				if ids.Of(other) == a {
					t.Errorf("Of(a different token) = Of(token) = %x", a)
				}
			}
		})
	}
	// Each Hasher draws its own GMAC key.
	one, two := New(true), New(true)
	if one.GMAC() && one.Of(tok) == two.Of(tok) {
		t.Errorf("two Hashers give a token the same identity; want a random key each")
	}
}

func BenchmarkOf(b *testing.B) {
	ids := New(true)
	tok := strings.Repeat("a", 64)
	b.ReportAllocs()
	for b.Loop() {
		_ = ids.Of(tok)
	}
}
