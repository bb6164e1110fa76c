package verify_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestTokenCacheCountsConfirmation: the cnf claim a cached verdict keeps
// decoded (Result.Confirmation: jkt, x5t#S256, the names of other members)
// is memory of the entry, and the byte estimate counts it, also for a token
// whose cnf holds as many members as max_token_bytes lets it.
func TestTokenCacheCountsConfirmation(t *testing.T) {
	if testing.Short() {
		t.Skip("mints RS256 tokens")
	}
	bigCnf := map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}
	for i := range 1200 {
		bigCnf[fmt.Sprintf("m%d", i)] = 0
	}
	for _, tc := range []struct {
		name string
		n    int
		cnf  map[string]any
	}{
		{"dpop-bound", 1000, map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}},
		{"many-members", 200, bigCnf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			toks := make([]string, tc.n)
			key := testkeys.SigningKey("RS256")
			hdr := map[string]any{"kid": kidFor("RS256"), "typ": "JWT"}
			var wg sync.WaitGroup
			for w := range runtime.GOMAXPROCS(0) {
				wg.Go(func() {
					for i := w; i < len(toks); i += runtime.GOMAXPROCS(0) {
						c := realisticClaims(i)
						c["cnf"] = tc.cnf
						toks[i] = testkeys.Mint("RS256", key, hdr, c)
					}
				})
			}
			wg.Wait()
			measured, estimated := cacheMemory(t, toks)
			runtime.KeepAlive(toks)
			t.Logf("token %d bytes; heap per cached entry %.0f bytes; estimate %.0f bytes", len(toks[0]), measured, estimated)
			if r := estimated / measured; r < 0.9 {
				t.Errorf("estimated bytes per entry = %.0f, measured %.0f: %.0f%% of the heap is not counted", estimated, measured, 100*(1-r))
			}
		})
	}
}
