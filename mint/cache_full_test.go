package mint

import (
	"strconv"
	"testing"
	"time"
)

// TestFullCacheInsertIsNotLinear: an insert into a full minted-token cache
// whose entries are all still within their reuse drops one entry, found
// among a few; it does not walk every entry under the write lock looking
// for expired ones. Before, each such insert scanned the whole map
// (max_entries up to 1 000 000), so once distinct source tokens filled it
// every new one stopped every lookup for the length of a scan (about 1 ms
// at 64 000 entries). Counted, not timed: the entries an insert looks at.
func TestFullCacheInsertIsNotLinear(t *testing.T) {
	tok := Token{JWT: "j"}
	reuse := t0.Add(time.Hour).UnixNano()
	for _, n := range []int{1000, 64000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			c := newTokenCache(n)
			c.maxBytes = 1 << 40
			for i := range n {
				c.put("s"+strconv.Itoa(i), nil, nil, tok, reuse, t0)
			}
			if c.examined != 0 {
				t.Fatalf("filling the cache looked at %d entries, want none", c.examined)
			}
			const inserts = 200
			for i := range inserts {
				c.put("new-"+strconv.Itoa(i), nil, nil, tok, reuse, t0)
			}
			if c.len() != n {
				t.Errorf("the cache holds %d entries, want %d", c.len(), n)
			}
			if most := inserts * 8; c.examined > most {
				t.Errorf("%d inserts into a full cache of %d live entries looked at %d entries, want at most %d: it walks the cache",
					inserts, n, c.examined, most)
			}
		})
	}
}
