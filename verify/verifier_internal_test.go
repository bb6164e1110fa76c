package verify

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestHeaderCacheBounded: a flood of distinct headers that a key verified
// (the only ones the header cache takes: remember) never grows the header
// cache past its bound, and long headers are not cached at all.
func TestHeaderCacheBounded(t *testing.T) {
	k, err := cache.NewKey(testkeys.Secret(), cache.KeyMeta{Kid: "k", Local: true})
	if err != nil {
		t.Fatal(err)
	}
	var keys cache.Keys
	keys.Store(cache.NewSet([]*cache.Key{k}, nil, time.Time{}, time.Time{})) // never stale
	now := time.Unix(1_800_000_000, 0)
	v, err := New(Options{Issuers: []Issuer{{Issuer: "https://a.example.com/", Keys: &keys, AllowHMAC: true}}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"iss": "https://a.example.com/", "exp": now.Add(time.Hour).Unix()}
	for i := range 2 * headerCacheEntries {
		tok := testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"kid": "k", "n": i}, claims)
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Fatalf("Verify() = %v, want nil", err)
		}
		if n := len(v.headers.m); n > headerCacheEntries {
			t.Fatalf("header cache holds %d entries, want ≤ %d", n, headerCacheEntries)
		}
	}
	if n := len(v.headers.m); n != headerCacheEntries {
		t.Fatalf("header cache holds %d entries after %d verified headers, want it full (%d)", n, 2*headerCacheEntries, headerCacheEntries)
	}
	v.headers = headerCache{}
	long := testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"kid": "k", "x": string(make([]rune, headerCacheMaxSeg))}, claims)
	if _, err := v.Verify(context.Background(), long); err != nil {
		t.Fatalf("Verify(long header) = %v, want nil", err)
	}
	if n := len(v.headers.m); n != 0 {
		t.Fatalf("header cache holds %d entries after a header over %d bytes, want none", n, headerCacheMaxSeg)
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
