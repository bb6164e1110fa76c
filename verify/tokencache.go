package verify

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jwksverify/jwksverify/cache"
)

// The verified-token cache remembers successful verdicts by the exact token
// string. It is sharded so that hits on different shards never touch the
// same lock; a hit takes one read lock, allocates nothing, and re-checks
// what can change after the verdict: the time claims (with leeway), the
// issuer's key set still being usable, and the verifying key still being in
// it (the very same *cache.Key), so a key that leaves the set takes its
// verdicts with it. Only successes are cached.
//
// Entries live until the token's exp; a token without exp for at most
// noExpTTL (5 minutes). The cache is bounded in entries and, approximately,
// in bytes; when full, an insert evicts an arbitrary entry (preferring an
// expired one) from its own shard, or from the next non-empty one.

const tokenShards = 64

type tokenCache struct {
	seed       maphash.Seed
	maxEntries int64
	maxBytes   int64
	entries    atomic.Int64
	bytes      atomic.Int64
	evictions  atomic.Uint64
	shards     [tokenShards]tokenShard
}

type tokenShard struct {
	mu     sync.RWMutex
	m      map[uint64]*tokenEntry // by maphash of the token; entry.token confirms
	hits   atomic.Uint64
	misses atomic.Uint64
	_      [64]byte // keep shards' counters on distinct cache lines
}

type tokenEntry struct {
	token    string
	res      *Result
	is       *issuer
	key      *cache.Key
	deadline time.Time // the entry is dead at or after it
	size     int64
}

// tokenEntryOverhead approximates an entry's fixed memory: the entry, the
// Result, and the map slot.
const tokenEntryOverhead = 512

func newTokenCache(o TokenCacheOptions) *tokenCache {
	c := &tokenCache{
		seed:       maphash.MakeSeed(),
		maxEntries: int64(o.MaxEntries),
		maxBytes:   o.MaxBytes,
	}
	for i := range c.shards {
		c.shards[i].m = make(map[uint64]*tokenEntry)
	}
	return c
}

// get returns the cached verdict for token if it is still valid at now.
func (c *tokenCache) get(token string, now time.Time) *Result {
	h := maphash.String(c.seed, token)
	sh := &c.shards[h%tokenShards]
	sh.mu.RLock()
	e := sh.m[h]
	sh.mu.RUnlock()
	if e == nil || e.token != token {
		sh.misses.Add(1)
		return nil
	}
	if !e.valid(now) {
		sh.misses.Add(1)
		c.remove(sh, h, e)
		return nil
	}
	sh.hits.Add(1)
	return e.res
}

// valid re-checks a cached verdict at now.
func (e *tokenEntry) valid(now time.Time) bool {
	if !now.Before(e.deadline) {
		return false
	}
	r, is := e.res, e.is
	if !r.ExpiresAt.IsZero() && !now.Add(-is.leeway).Before(r.ExpiresAt) {
		return false
	}
	if !r.NotBefore.IsZero() && r.NotBefore.After(now.Add(is.leeway)) {
		return false
	}
	set := is.cfg.Keys.Load()
	if !set.Usable(now) {
		return false
	}
	if e.key.Kid != "" {
		k, ok := set.Lookup(e.key.Kid)
		return ok && k == e.key
	}
	return slices.Contains(set.KidlessKeys(), e.key)
}

// remove drops e if it is still the entry at h.
func (c *tokenCache) remove(sh *tokenShard, h uint64, e *tokenEntry) {
	sh.mu.Lock()
	if sh.m[h] == e {
		delete(sh.m, h)
		c.entries.Add(-1)
		c.bytes.Add(-e.size)
		c.evictions.Add(1)
	}
	sh.mu.Unlock()
}

// put caches a successful verdict.
func (c *tokenCache) put(token string, res *Result, is *issuer, key *cache.Key, now time.Time) {
	var deadline time.Time
	if res.ExpiresAt.IsZero() {
		deadline = now.Add(noExpTTL)
	} else {
		deadline = res.ExpiresAt
		if !now.Before(deadline) { // accepted within the leeway: not worth keeping
			return
		}
	}
	size := int64(tokenEntryOverhead + len(token) + len(res.Header) + 2*len(res.Claims))
	for k, val := range res.Extracted {
		size += int64(len(k) + len(val) + 32)
	}
	if size > c.maxBytes {
		return
	}
	h := maphash.String(c.seed, token)
	idx := int(h % tokenShards)

	// Reserve room first, evicting (one shard lock at a time) when full.
	if c.entries.Add(1) > c.maxEntries && !c.evictOne(idx, now) {
		c.entries.Add(-1)
		return
	}
	for tries := 0; c.bytes.Add(size) > c.maxBytes; tries++ {
		c.bytes.Add(-size)
		if tries == 16 || !c.evictOne(idx, now) {
			c.entries.Add(-1)
			return
		}
	}

	e := &tokenEntry{token: strings.Clone(token), res: res, is: is, key: key, deadline: deadline, size: size}
	sh := &c.shards[idx]
	sh.mu.Lock()
	if old := sh.m[h]; old != nil {
		// The same token verified twice concurrently, or (vanishingly rare)
		// a hash collision: replace the old entry.
		c.entries.Add(-1)
		c.bytes.Add(-old.size)
	}
	sh.m[h] = e
	sh.mu.Unlock()
}

// evictOne removes one entry, from shard start or the next non-empty one,
// preferring an expired entry among the first few it sees. It reports
// whether it removed one.
func (c *tokenCache) evictOne(start int, now time.Time) bool {
	for i := range tokenShards {
		sh := &c.shards[(start+i)%tokenShards]
		sh.mu.Lock()
		var victim uint64
		var found *tokenEntry
		seen := 0
		for h, e := range sh.m { // map order is random
			if found == nil || !now.Before(e.deadline) {
				victim, found = h, e
			}
			if seen++; seen == 4 || !now.Before(found.deadline) {
				break
			}
		}
		if found != nil {
			delete(sh.m, victim)
			c.entries.Add(-1)
			c.bytes.Add(-found.size)
			c.evictions.Add(1)
			sh.mu.Unlock()
			return true
		}
		sh.mu.Unlock()
	}
	return false
}

func (c *tokenCache) stats() CacheStats {
	var s CacheStats
	for i := range c.shards {
		s.Hits += c.shards[i].hits.Load()
		s.Misses += c.shards[i].misses.Load()
	}
	s.Evictions = c.evictions.Load()
	s.Entries = int(c.entries.Load())
	s.Bytes = c.bytes.Load()
	return s
}
