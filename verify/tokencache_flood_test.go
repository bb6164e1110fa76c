package verify_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestTokenCacheBoundUnderHeaderFlood: tokens that never verify (any JSON
// header, claims that are not even base64url) must not change what a cached
// verdict costs. Before, every parsed header went into the verifier's
// header cache, so such a flood pushed the valid tokens' shared header out
// and each cached entry then held a header of its own that the byte
// estimate (headerShared) did not count: max_bytes was no bound.
func TestTokenCacheBoundUnderHeaderFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("mints 500 RS256 tokens")
	}
	// An AD FS or Entra ID style header: x5t beside kid (about 130 bytes).
	hdr := map[string]any{"kid": kidFor("RS256"), "typ": "JWT",
		"x5t": "nOo3ZDrODXEK1jKWhXslHR_KXEg", "x5t#S256": "SJ-3pd1AT8Xrn7Ahx6jWGcjj8gw9KZ8N7PhuuXtU_pc"}
	toks := make([]string, 500)
	key := testkeys.SigningKey("RS256")
	var wg sync.WaitGroup
	for w := range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := w; i < len(toks); i += runtime.GOMAXPROCS(0) {
				toks[i] = testkeys.Mint("RS256", key, hdr, realisticClaims(i))
			}
		})
	}
	wg.Wait()
	ctx := context.Background()
	// Between two valid tokens, 1024 junk ones, each of a header of its own.
	flood := func(v *verify.Verifier, round int) {
		for i := range 1024 {
			hdr := fmt.Sprintf(`{"alg":"RS256","kid":"k%d-%d"}`, round, i)
			junk := base64.RawURLEncoding.EncodeToString([]byte(hdr)) + ".!.!"
			if _, err := v.Verify(ctx, junk); err == nil {
				t.Fatal("a junk token verified")
			}
		}
	}
	measured, estimated := cacheMemoryWith(t, toks, hdr, flood)
	t.Logf("heap per cached entry %.0f bytes; estimate %.0f bytes", measured, estimated)
	if r := estimated / measured; r < 0.8 {
		t.Errorf("under a flood of junk headers, estimated bytes per entry = %.0f, measured %.0f: the byte bound undercounts by %.0f%%", estimated, measured, 100*(1-r))
	}
}
