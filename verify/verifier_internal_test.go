package verify

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestHeaderCacheBounded: a flood of distinct headers (here: random kids)
// never grows the header cache past its bound, and long headers are not
// cached at all.
func TestHeaderCacheBounded(t *testing.T) {
	var keys cache.Keys
	keys.Store(cache.NewSet(nil, nil, time.Time{}, time.Time{})) // never stale
	v, err := New(Options{Issuers: []Issuer{{Issuer: "https://a.example.com/", Keys: &keys, AllowHMAC: true}}})
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"iss": "https://a.example.com/"}
	for i := range 2 * headerCacheEntries {
		tok := testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"kid": fmt.Sprint("kid-", i)}, claims)
		if _, err := v.Verify(context.Background(), tok); !errors.Is(err, ErrUnknownKid) {
			t.Fatalf("Verify() = %v, want %v", err, ErrUnknownKid)
		}
		if n := len(v.headers.m); n > headerCacheEntries {
			t.Fatalf("header cache holds %d entries, want ≤ %d", n, headerCacheEntries)
		}
	}
	long := testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"kid": "long", "x": string(make([]rune, headerCacheMaxSeg))}, claims)
	v.Verify(context.Background(), long)
	for seg := range v.headers.m {
		if len(seg) > headerCacheMaxSeg {
			t.Fatalf("header cache holds a %d-byte segment, want ≤ %d", len(seg), headerCacheMaxSeg)
		}
	}
}

// BenchmarkParse is the verifier's own work on a typical token before the
// signature: split, header (cached), base64 of claims and signature, and
// the claims scan. It is most of what BenchmarkVerify adds to the floor.
func BenchmarkParse(b *testing.B) {
	var keys cache.Keys
	v, err := New(Options{Issuers: []Issuer{{Issuer: "https://a.example.com/", Keys: &keys}}})
	if err != nil {
		b.Fatal(err)
	}
	tok := testkeys.Mint("RS256", testkeys.SigningKey("RS256"), map[string]any{"kid": "k-RS256"}, map[string]any{
		"iss": "https://a.example.com/", "sub": "alice", "aud": "api://orders", "iat": 1772600767, "exp": 1772604367,
		"scope": "orders.read orders.write", "jti": "5c1d2e3f-aaaa-bbbb-cccc-0123456789ab",
	})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, _, _, _, err := v.parse(tok); err != nil {
			b.Fatal(err)
		}
	}
}
