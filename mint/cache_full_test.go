package mint

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// TestFullCacheInsertIsNotLinear: an insert into a full minted-token cache
// whose entries are all still within their reuse drops one entry; it does
// not walk every entry under the write lock looking for expired ones. Before,
// each such insert scanned the whole map (max_entries up to 1 000 000), so
// once distinct source tokens filled it every new one stopped every
// lookup for the length of a scan. The cost of an insert at 64 000 entries is
// compared with one at 1 000: a walk makes it about 64 times as much; a
// bounded eviction about the same (the bound of 16 leaves room for a busy
// machine and cache misses).
func TestFullCacheInsertIsNotLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a cache of 64 000 entries")
	}
	tok := Token{JWT: "j"}
	reuse := t0.Add(time.Hour).UnixNano()
	perInsert := func(n int) time.Duration {
		c := newTokenCache(n)
		c.maxBytes = 1 << 40
		for i := range n {
			c.put("s"+strconv.Itoa(i), nil, nil, tok, reuse, t0)
		}
		const inserts = 200
		best := time.Duration(1 << 62)
		for round := range 5 {
			keys := make([]string, inserts)
			for i := range keys {
				keys[i] = fmt.Sprintf("new-%d-%d", round, i)
			}
			start := time.Now()
			for _, k := range keys {
				c.put(k, nil, nil, tok, reuse, t0)
			}
			best = min(best, time.Since(start)/inserts)
			if c.len() > n {
				t.Fatalf("the cache holds %d entries, over %d", c.len(), n)
			}
		}
		return best
	}
	small, large := perInsert(1000), perInsert(64000)
	t.Logf("an insert into a full cache: %v at 1 000 entries, %v at 64 000", small, large)
	if large > 16*small+time.Microsecond {
		t.Errorf("an insert into a full cache of 64 000 entries costs %v, %.0f times one at 1 000 (%v): it walks the cache",
			large, float64(large)/float64(small), small)
	}
}
