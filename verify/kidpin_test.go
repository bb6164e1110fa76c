package verify_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/jwksverify/jwksverify/verify"
)

// kidKeeper is a Refresher that keeps every kid it is asked for, as
// jwks.Fetcher does (the flight's kids, then the negative-kid memory,
// up to cache.MaxMissing of them per issuer).
type kidKeeper struct {
	mu   sync.Mutex
	kids []string
}

func (k *kidKeeper) RefreshUnknownKid(ctx context.Context, kid string) error {
	k.mu.Lock()
	k.kids = append(k.kids, kid)
	k.mu.Unlock()
	return fmt.Errorf("%w: test", verify.ErrKidAbsent)
}

// TestUnknownKidDoesNotPinTheHeader: the kid a Refresher is asked for is a
// string of its own, not a slice of the token's decoded header. Anyone can
// send a token naming an unknown kid (the signature is checked after the
// key is found), and jwks.Fetcher keeps up to 4096 such kids per issuer for
// as long as the process runs: each kept kid held its token's whole header
// alive, so headers padded to max_token_bytes made the negative-kid memory
// hold up to 4096 times their size (48 MiB per issuer at the default 16 KiB,
// 3 GiB at the largest max_token_bytes) instead of 4096 short kids.
func TestUnknownKidDoesNotPinTheHeader(t *testing.T) {
	const (
		n   = 32
		pad = 192 << 10 // decoded bytes of padding in each header
	)
	padding := `"x":"` + strings.Repeat("a", pad) + `"`
	for _, tt := range []struct {
		name   string
		header func(kid string) string
	}{
		{"kid-before-padding", func(kid string) string { return `{"alg":"ES256","kid":"` + kid + `",` + padding + `}` }},
		{"kid-after-padding", func(kid string) string { return `{"alg":"ES256",` + padding + `,"kid":"` + kid + `"}` }},
		{"kid-with-escape", func(kid string) string { return `{"alg":"ES256",` + padding + `,"kid":"\u006b` + kid + `"}` }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			keeper := &kidKeeper{}
			is := issuerA(allKeys(t))
			is.Refresher = keeper
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, MaxTokenBytes: verify.MaxMaxTokenBytes})
			toks := make([]string, n)
			for i := range toks {
				toks[i] = signRaw(t, "ES256", tt.header(fmt.Sprintf("unknown-%04d", i)), body())
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i, tok := range toks {
				if _, err := v.Verify(context.Background(), tok); !errors.Is(err, verify.ErrUnknownKid) {
					t.Fatalf("Verify(token %d) = %v, want %v", i, err, verify.ErrUnknownKid)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(toks)
			if len(keeper.kids) != n {
				t.Fatalf("RefreshUnknownKid calls = %d, want %d", len(keeper.kids), n)
			}
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			// The kids themselves are a few hundred bytes; a pinned header
			// is pad bytes each (6 MiB in all).
			if limit := int64(n * pad / 8); held > limit {
				t.Errorf("heap held after %d unknown kids = %d bytes, want at most %d: the kept kids pin their tokens' headers", n, held, limit)
			}
			runtime.KeepAlive(keeper)
		})
	}
}
