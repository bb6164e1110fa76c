package verify

import (
	"context"
	"testing"
)

// Once the cross-check has caught a prepared verifier accepting a forgery
// (a proven bug), the verifier stops trusting that path for good: a valid
// token in between must not re-prove the key and let unsampled forgeries
// through again.
func TestCrossCheckMismatchSticks(t *testing.T) {
	for _, alg := range []string{"RS256", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			v := cryptoVerifier(t, alg, Options{}) // default rate 1/1000
			v.sig.prepared = mutantSeam()
			_, forged0 := cryptoToken(alg, 0)
			if _, err := v.Verify(context.Background(), forged0); err == nil {
				t.Fatalf("first-use forgery accepted")
			}
			if v.CryptoStats().Mismatches != 1 {
				t.Fatalf("CryptoStats() = %+v, want the mismatch counted", v.CryptoStats())
			}
			// Ordinary traffic goes on: one valid token, then forgeries.
			valid, _ := cryptoToken(alg, 1)
			if _, err := v.Verify(context.Background(), valid); err != nil {
				t.Fatal(err)
			}
			accepted := 0
			for i := 2; i < 202; i++ {
				_, forged := cryptoToken(alg, i)
				if _, err := v.Verify(context.Background(), forged); err == nil {
					accepted++
				}
			}
			if accepted > 0 {
				t.Errorf("after a logged mismatch, %d of 200 forgeries were accepted (CryptoStats %+v)", accepted, v.CryptoStats())
			}
		})
	}
}

// A forgery the prepared path accepted unsampled is cached; when a later
// cross-check proves the prepared path wrong for that key, the cached
// verdicts it produced keep being served until the tokens expire.
func TestCrossCheckMismatchDropsCachedVerdicts(t *testing.T) {
	v := cryptoVerifier(t, "RS256", Options{CrossCheckRate: 1e-9, TokenCache: TokenCacheOptions{MaxEntries: 100}})
	v.sig.prepared = mutantSeam()
	valid, _ := cryptoToken("RS256", 0)
	if _, err := v.Verify(context.Background(), valid); err != nil { // proves the key
		t.Fatal(err)
	}
	_, forged1 := cryptoToken("RS256", 1)
	if _, err := v.Verify(context.Background(), forged1); err != nil {
		t.Fatalf("unsampled forgery: %v (this test needs it accepted, as 999 in 1000 are at the default rate)", err)
	}
	v.sig.cross.all = true // the sampler picks the next accept
	_, forged2 := cryptoToken("RS256", 2)
	if _, err := v.Verify(context.Background(), forged2); err == nil || v.CryptoStats().Mismatches != 1 {
		t.Fatalf("sampled forgery: %v, %+v; want a mismatch", err, v.CryptoStats())
	}
	if _, err := v.Verify(context.Background(), forged1); err == nil {
		t.Errorf("after the mismatch on kid k1, the earlier forgery is still accepted from the token cache (CacheStats %+v)", v.CacheStats())
	}
}
