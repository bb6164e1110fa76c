package mint

import (
	"crypto/sha256"
	"sync"
	"time"
)

// tokenCache holds minted tokens by source token and policy, for one keys
// file (a change of the file starts a new one). It is bounded: an insert
// into a full cache first drops the entries past their reuse, then, if
// still full, one arbitrary entry. Lookups take a read lock and do not
// allocate.
type tokenCache struct {
	mu  sync.RWMutex
	m   map[cacheKey]cacheEntry
	max int
}

// cacheKey is a source token under a policy. The token is kept as it came
// (the verified-token cache keeps it too); the policy by pointer: a
// reloaded policy is a new one.
type cacheKey struct {
	token string
	p     *Policy
}

type cacheEntry struct {
	t          Token
	reuseUntil int64 // Unix ns
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{m: make(map[cacheKey]cacheEntry), max: max}
}

// get returns the token cached for token under p when now is before its
// reuse limit.
func (c *tokenCache) get(token string, p *Policy, now time.Time) (Token, bool) {
	c.mu.RLock()
	e, ok := c.m[cacheKey{token, p}]
	c.mu.RUnlock()
	if !ok || now.UnixNano() >= e.reuseUntil {
		return Token{}, false
	}
	return e.t, true
}

// put caches t for token under p until reuseUntil.
func (c *tokenCache) put(token string, p *Policy, t Token, reuseUntil int64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		n := now.UnixNano()
		for k, e := range c.m {
			if n >= e.reuseUntil {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < c.max {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[cacheKey{token, p}] = cacheEntry{t: t, reuseUntil: reuseUntil}
}

func (c *tokenCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// sha256Sum is the identity of a keys file's content.
func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
