package mint

import (
	"crypto/sha256"
	"sync"
	"time"
)

// maxCacheBytes bounds the bytes of the source tokens and minted tokens a
// minted-token cache holds (source tokens may be up to
// limits.max_token_bytes each).
const maxCacheBytes = 32 << 20

// tokenCache holds minted tokens by source token and policy, for one keys
// file (a change of the file starts a new one). It is bounded in entries
// and in bytes: an insert into a full cache drops an entry past its reuse
// among a few sampled, else an arbitrary one, until it fits. Lookups take
// a read lock and do not allocate.
type tokenCache struct {
	mu       sync.RWMutex
	m        map[cacheKey]cacheEntry
	max      int
	bytes    int // of every entry's source token and minted token
	maxBytes int
	// examined counts the entries inserts looked at to find a victim (a
	// test's proof that an insert into a full cache is not a walk of it);
	// updated under the write lock, which the insert holds anyway.
	examined int
}

// cacheKey is a source token under a policy. The token is kept as it came
// (the verified-token cache keeps it too); the policy by pointer: a
// reloaded policy is a new one.
type cacheKey struct {
	token string
	p     *Policy
}

type cacheEntry struct {
	t Token
	// src is the source's claims the token was minted from: the same
	// string of an opaque token may be answered otherwise by its
	// authorization server later (scope taken away, exp sooner), and a
	// token minted from the old answer is not handed out for the new one.
	src        string
	reuseUntil int64 // Unix ns
	size       int   // bytes counted against maxBytes
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{m: make(map[cacheKey]cacheEntry), max: max, maxBytes: maxCacheBytes}
}

// get returns the token cached for token under p when now is before its
// reuse limit and it was minted from the same source claims.
func (c *tokenCache) get(token string, src []byte, p *Policy, now time.Time) (Token, bool) {
	c.mu.RLock()
	e, ok := c.m[cacheKey{token, p}]
	c.mu.RUnlock()
	if !ok || now.UnixNano() >= e.reuseUntil || string(src) != e.src {
		return Token{}, false
	}
	return e.t, true
}

// put caches t, minted from the source claims src, for token under p until
// reuseUntil.
func (c *tokenCache) put(token string, src []byte, p *Policy, t Token, reuseUntil int64, now time.Time) {
	size := len(token) + len(src) + 2*len(t.JWT) + len("Bearer ")
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{token, p}
	if old, ok := c.m[k]; ok {
		c.drop(k, old)
	}
	n := now.UnixNano()
	for len(c.m) > 0 && (len(c.m) >= c.max || c.bytes+size > c.maxBytes) {
		// Sample a few entries (map order is random): the first past its
		// reuse, else the last sampled. Walking every entry for those
		// past their reuse made each insert into a cache full of live
		// ones O(max_entries) under the write lock.
		var victim cacheKey
		var ve cacheEntry
		seen := 0
		for k, e := range c.m {
			victim, ve = k, e
			c.examined++
			if seen++; n >= e.reuseUntil || seen == 8 {
				break
			}
		}
		c.drop(victim, ve)
	}
	c.m[k] = cacheEntry{t: t, src: string(src), reuseUntil: reuseUntil, size: size}
	c.bytes += size
}

// drop deletes the entry k, e.
func (c *tokenCache) drop(k cacheKey, e cacheEntry) {
	delete(c.m, k)
	c.bytes -= e.size
}

func (c *tokenCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// sha256Sum is the identity of a keys file's content.
func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
