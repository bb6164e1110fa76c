package verify

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestTokenCacheSHA256Fallback: the cache works the same with the SHA-256
// identities it falls back to where GCM is refused.
func TestTokenCacheSHA256Fallback(t *testing.T) {
	k, err := cache.NewKey(testkeys.Secret(), cache.KeyMeta{Kid: "k", Local: true})
	if err != nil {
		t.Fatal(err)
	}
	var keys cache.Keys
	keys.Store(cache.NewSet([]*cache.Key{k}, nil, time.Time{}, time.Time{}))
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := Options{
		Issuers:    []Issuer{{Issuer: "https://a.example.com/", Keys: &keys, AllowHMAC: true}},
		Now:        func() time.Time { return t0 },
		TokenCache: TokenCacheOptions{MaxEntries: 10},
	}
	v, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	v.tokens = newTokenCache(v.opts.TokenCache, false)
	claims := map[string]any{"iss": "https://a.example.com/", "exp": t0.Add(time.Hour).Unix()}
	tok := testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"kid": "k"}, claims)
	first, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatalf("Verify() = %v, want nil", err)
	}
	second, err := v.Verify(context.Background(), tok)
	if err != nil || second != first {
		t.Fatalf("Verify() again = %v, same Result %v; want the cached Result", err, second == first)
	}
	forged := AlterSignature(tok)
	if _, err := v.Verify(context.Background(), forged); err == nil {
		t.Errorf("Verify(forged) = nil, want a rejection")
	}
	if s := v.CacheStats(); s.Hits != 1 || s.Entries != 1 {
		t.Errorf("CacheStats() = %+v, want 1 hit and 1 entry", s)
	}
}
