package verify_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// realisticClaims are a typical access token's claims for user i: about 250
// bytes of JSON, unique per i (sub, email, jti).
func realisticClaims(i int) map[string]any {
	return map[string]any{
		"iss":   issA,
		"sub":   fmt.Sprintf("user-%08d", i),
		"aud":   aud,
		"iat":   t0.Unix(),
		"nbf":   t0.Unix(),
		"exp":   t0.Add(time.Hour).Unix(),
		"jti":   fmt.Sprintf("%032x", i),
		"azp":   "web-frontend",
		"scope": "openid profile email orders:read orders:write",
		"email": fmt.Sprintf("user-%08d@example.com", i),
	}
}

// realisticTokens mints n distinct RS256 tokens with a typical 3-member
// header (alg, kid, typ) and realisticClaims, on every core (an RSA
// signature takes about a millisecond).
func realisticTokens(n int) []string {
	toks := make([]string, n)
	key := testkeys.SigningKey("RS256")
	hdr := map[string]any{"kid": kidFor("RS256"), "typ": "JWT"}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				toks[i] = testkeys.Mint("RS256", key, hdr, realisticClaims(i))
			}
		})
	}
	wg.Wait()
	return toks
}

// cacheMemory fills a fresh verifier's token cache with toks and returns the
// heap bytes it holds per entry (HeapAlloc after GC, before and after the
// fill) and the cache's own estimate per entry (CacheStats.Bytes).
func cacheMemory(t testing.TB, toks []string) (measured, estimated float64) {
	t.Helper()
	return cacheMemoryWith(t, toks, map[string]any{"kid": kidFor("RS256"), "typ": "JWT"}, nil)
}

// cacheMemoryWith is cacheMemory for tokens of the JOSE header hdr (the
// warm-up token's), calling between, when not nil, with the verifier before
// each token is verified (i -1 before the first, after the warm-up).
func cacheMemoryWith(t testing.TB, toks []string, hdr map[string]any, between func(v *verify.Verifier, i int)) (measured, estimated float64) {
	t.Helper()
	v := newVerifier(t, verify.Options{
		Issuers:    []verify.Issuer{issuerA(allKeys(t))},
		TokenCache: verify.TokenCacheOptions{MaxEntries: len(toks) + 1, MaxBytes: 1 << 40},
	})
	ctx := context.Background()
	// Warm up whatever is shared by all tokens (the header cache) and is
	// not a per-entry cost, with a token not in toks.
	warm := testkeys.Mint("RS256", testkeys.SigningKey("RS256"), hdr, realisticClaims(-1))
	if _, err := v.Verify(ctx, warm); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		between(v, -1)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i, tok := range toks {
		if between != nil {
			between(v, i)
		}
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	s := v.CacheStats()
	if s.Entries != len(toks)+1 {
		t.Fatalf("CacheStats().Entries = %d, want %d", s.Entries, len(toks)+1)
	}
	runtime.KeepAlive(v)
	runtime.KeepAlive(toks)
	n := float64(len(toks))
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n, float64(s.Bytes) / float64(s.Entries)
}

// TestTokenCacheMemory: a cached RS256 token with a 250-byte payload costs at
// most 1 KiB of heap, and the cache's byte accounting is within 20% of it.
func TestTokenCacheMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("mints 1000 RS256 tokens")
	}
	toks := realisticTokens(1000)
	measured, estimated := cacheMemory(t, toks)
	t.Logf("token %d bytes; heap per cached entry %.0f bytes; estimate %.0f bytes", len(toks[0]), measured, estimated)
	if measured > 1024 {
		t.Errorf("heap per cached entry = %.0f bytes, want ≤ 1024", measured)
	}
	if r := estimated / measured; r < 0.8 || r > 1.2 {
		t.Errorf("estimated bytes per entry = %.0f, measured %.0f: want within 20%%", estimated, measured)
	}
}

// BenchmarkTokenCacheMemory reports the heap held per cached entry (B/entry)
// and the cache's estimate (est-B/entry) for 10 000 distinct RS256 tokens.
func BenchmarkTokenCacheMemory(b *testing.B) {
	toks := realisticTokens(10000)
	var measured, estimated float64
	for b.Loop() {
		measured, estimated = cacheMemory(b, toks)
	}
	b.ReportMetric(measured, "B/entry")
	b.ReportMetric(estimated, "est-B/entry")
	b.ReportMetric(float64(len(toks[0])), "token-B")
}
