package verify

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/tokenid"
)

// The verified-token cache remembers successful verdicts by token. It is
// sharded so that hits on different shards never touch the same lock; a hit
// takes one read lock, allocates nothing, and re-checks what can change after
// the verdict: the time claims (with leeway), the issuer's key set still
// being usable, and the verifying key still being in it (the very same
// *cache.Key), so a key that leaves the set takes its verdicts with it. Only
// successes are cached.
//
// Entries live until the token's exp; a token without exp for at most
// noExpTTL (5 minutes). The cache is bounded in entries and in bytes (its
// estimate, tokenEntry.size, is within about 10% of the heap it holds:
// TestTokenCacheMemory); when full, an insert evicts an arbitrary entry
// (preferring an expired one) from its own shard, or from the next non-empty
// one.
//
// An entry does not keep the token. A token is identified by a 128-bit
// AES-GMAC tag under a key drawn at random for each cache (internal/tokenid): the
// token itself (about 780 bytes for an RS256 token with a 250-byte payload)
// was more than a third of an entry's memory, and the 1 KiB-per-token target
// cannot be met while keeping it beside the decoded claims. GMAC, not
// SHA-256, because it costs about 0.2 µs for such a token where SHA-256
// costs about 0.55 µs, over the whole 0.5 µs budget of a hit. Its security
// as a token identity: GHASH is almost-XOR-universal, so two different
// tokens of at most L blocks of 16 bytes get the same tag with probability
// at most (L+1)/2^128 over the key (at most about 2^-118 for a 16 KiB
// token); the key never leaves the process and tags are never exposed, so
// an attacker who wants a forged token to hit a cached verdict can only
// guess, one request at a time. Where GCM is refused (GODEBUG=fips140=only)
// the tag is the first 128 bits of SHA-256 instead: correct, slower.

const tokenShards = 64

// tokenID identifies a token in the cache (see above).
type tokenID = tokenid.ID

type tokenCache struct {
	ids        *tokenid.Hasher
	maxEntries int64
	maxBytes   int64
	entries    atomic.Int64
	bytes      atomic.Int64
	evictions  atomic.Uint64
	shards     [tokenShards]tokenShard
}

type tokenShard struct {
	mu     sync.RWMutex
	m      map[uint64]*tokenEntry // by the first 8 bytes of the tokenID; entry.id confirms
	hits   atomic.Uint64
	misses atomic.Uint64
	_      [64]byte // keep shards' counters on distinct cache lines
}

// tokenEntry is one cached verdict. Its Result is a compact copy of the one
// the verify call built (compactInto): one allocation for the entry and the
// Result, one for the claims, one for the strings that are not shared.
type tokenEntry struct {
	id   tokenID
	kind tokenKind // what the token was verified as: answers only that kind
	is   *issuer
	key  *cache.Key
	// keys is the issuer's key set when the entry was made, if it held
	// key: a hit under the same keys (cache.Set.SameKeys) needs no lookup.
	keys     *cache.Set
	deadline time.Time // the entry is dead at or after it
	size     int64
	box      resultBox
}

// Per-entry memory besides the claims and the entry's own strings: the
// entry with its Result, and a map slot (8-byte key, 8-byte pointer, at a
// load of 7/8, with the table's growth slack).
const (
	tokenEntryBytes = int64(unsafe.Sizeof(tokenEntry{}))
	tokenSlotBytes  = 32
	// extractedItemBytes approximates a Result.Extracted map entry's overhead.
	extractedItemBytes = 48
	// confirmationBytes is a Result.Confirmation's own memory.
	confirmationBytes = int64(unsafe.Sizeof(Confirmation{}))
)

func newTokenCache(o TokenCacheOptions, useGMAC bool) *tokenCache {
	c := &tokenCache{
		ids:        tokenid.New(useGMAC),
		maxEntries: int64(o.MaxEntries),
		maxBytes:   o.MaxBytes,
	}
	for i := range c.shards {
		c.shards[i].m = make(map[uint64]*tokenEntry)
	}
	return c
}

// get returns the cached verdict for token if it is still valid at now and
// its issuer is in owned (nil: any), and the token's identity (for put, on a
// miss). A verdict of an issuer not in owned (one a reload removed or
// changed) is dropped.
func (c *tokenCache) get(token string, now time.Time, owned *issuerSet, kind tokenKind) (*Result, tokenID) {
	id := c.ids.Of(token)
	h := id.Slot()
	sh := &c.shards[h%tokenShards]
	sh.mu.RLock()
	e := sh.m[h]
	sh.mu.RUnlock()
	if e == nil || e.id != id || e.kind != kind {
		// Another kind's verdict of the same token is not this one's: a
		// miss, and the put that follows replaces it.
		sh.misses.Add(1)
		return nil, id
	}
	if !e.valid(now) || !owned.has(e.is) {
		sh.misses.Add(1)
		c.remove(sh, h, e)
		return nil, id
	}
	sh.hits.Add(1)
	return &e.box.Result, id
}

// valid re-checks a cached verdict at now.
func (e *tokenEntry) valid(now time.Time) bool {
	if !now.Before(e.deadline) {
		return false
	}
	r, is := &e.box.Result, e.is
	if !r.ExpiresAt.IsZero() && !now.Add(-is.leeway).Before(r.ExpiresAt) {
		return false
	}
	if !r.NotBefore.IsZero() && r.NotBefore.After(now.Add(is.leeway)) {
		return false
	}
	// iat ahead of now beyond the leeway is not_yet_valid for both kinds
	// (checkNbf, checkIDClaims): a verdict cached at a later now must not
	// answer an earlier one.
	if !r.IssuedAt.IsZero() && r.IssuedAt.After(now.Add(is.leeway)) {
		return false
	}
	// Without iat, MaxLifetime holds exp − now (checkLifetime): it too
	// depends on the instant asked.
	if r.IssuedAt.IsZero() && is.cfg.MaxLifetime > 0 && r.ExpiresAt.Sub(now) > is.cfg.MaxLifetime {
		return false
	}
	set := is.cfg.Keys.Load()
	if !set.Usable(now) {
		return false
	}
	if set.SameKeys(e.keys) {
		return true // key was in these keys when the entry was made
	}
	return holdsKey(set, e.key)
}

// holdsKey reports whether set holds key (the same *cache.Key).
func holdsKey(set *cache.Set, key *cache.Key) bool {
	if key.Kid != "" {
		k, ok := set.Lookup(key.Kid)
		return ok && k == key
	}
	return slices.Contains(set.KidlessKeys(), key)
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

// keep drops every cached verdict whose issuer is not in owned.
func (c *tokenCache) keep(owned *issuerSet) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for h, e := range sh.m {
			if !owned.has(e.is) {
				delete(sh.m, h)
				c.entries.Add(-1)
				c.bytes.Add(-e.size)
				c.evictions.Add(1)
			}
		}
		sh.mu.Unlock()
	}
}

// clear drops every cached verdict.
func (c *tokenCache) clear() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for h, e := range sh.m {
			delete(sh.m, h)
			c.entries.Add(-1)
			c.bytes.Add(-e.size)
		}
		sh.mu.Unlock()
	}
}

// put caches a successful verdict for the token identified by id, and
// returns the Result to hand out: the cached copy, or res when it is not
// cached.
func (c *tokenCache) put(id tokenID, res *Result, is *issuer, key *cache.Key, now time.Time, kind tokenKind) *Result {
	var deadline time.Time
	if res.ExpiresAt.IsZero() {
		deadline = now.Add(noExpTTL)
	} else {
		deadline = res.ExpiresAt
		if !now.Before(deadline) { // accepted within the leeway: not worth keeping
			return res
		}
	}
	size := tokenEntryBytes + tokenSlotBytes + int64(len(res.Claims)) + int64(ownedStringBytes(res, is))
	if len(res.Audience) > 1 {
		size += int64(len(res.Audience)) * 16 // the slice of an audience array
	}
	if cnf := res.Confirmation; cnf != nil {
		size += confirmationBytes + int64(len(cnf.Other))*16 // the struct, the slice of other members
	}
	if !headerShared(res) {
		size += 2 * int64(len(res.Header)) // its raw bytes and the string its members are cut from
	}
	for k, val := range res.Extracted {
		size += int64(len(k) + len(val) + extractedItemBytes)
	}
	if size > c.maxBytes {
		return res
	}
	h := id.Slot()
	idx := int(h % tokenShards)

	// Reserve room first, evicting (one shard lock at a time) when full.
	if c.entries.Add(1) > c.maxEntries && !c.evictOne(idx, now) {
		c.entries.Add(-1)
		return res
	}
	for tries := 0; c.bytes.Add(size) > c.maxBytes; tries++ {
		c.bytes.Add(-size)
		if tries == 16 || !c.evictOne(idx, now) {
			c.entries.Add(-1)
			return res
		}
	}

	e := &tokenEntry{id: id, kind: kind, is: is, key: key, deadline: deadline, size: size}
	if set := is.cfg.Keys.Load(); holdsKey(set, key) {
		e.keys = set
	}
	compactInto(&e.box, res, is)
	sh := &c.shards[idx]
	sh.mu.Lock()
	if old := sh.m[h]; old != nil {
		// The same token verified twice concurrently, or (vanishingly rare)
		// two tokens whose identities share 64 bits: replace the old entry.
		c.entries.Add(-1)
		c.bytes.Add(-old.size)
	}
	sh.m[h] = e
	sh.mu.Unlock()
	return &e.box.Result
}

// headerShared reports whether res's header came from the verifier's header
// cache, where every token with the same header segment shares it: its
// memory is then not the entry's.
func headerShared(res *Result) bool {
	return base64.RawURLEncoding.EncodedLen(len(res.Header)) <= headerCacheMaxSeg
}

// ownedStringBytes is the size of the one string compactInto makes for an
// entry: the values not shared with the issuer's configuration, the header
// or the key.
func ownedStringBytes(res *Result, is *issuer) int {
	n := len(res.Subject) + len(res.ID)
	if cnf := res.Confirmation; cnf != nil {
		n += len(cnf.JKT) + len(cnf.X5tS256)
		for _, o := range cnf.Other {
			n += len(o)
		}
	}
	if res.Issuer != is.cfg.Issuer {
		n += len(res.Issuer)
	}
	if !configuredAudience(res, is) {
		for _, a := range res.Audience {
			n += len(a)
		}
	}
	return n
}

// configuredAudience reports whether res has a single audience that is one
// of the issuer's configured audiences (the common case: then the entry
// shares the configuration's string).
func configuredAudience(res *Result, is *issuer) bool {
	return len(res.Audience) == 1 && slices.Contains(is.cfg.Audiences, res.Audience[0])
}

// compactInto copies res into box so that the copy shares no memory with
// the verify call's buffers, which hold the signature beside the claims and
// a second copy of the claims that the claim strings are cut from: kept,
// they more than doubled an entry's memory. The claims are copied at their
// exact size; the issuer and a configured audience are the configuration's
// strings; the subject, the jti, any other issuer or audience and the cnf's
// members (jkt, x5t#S256, the names of the others) share one allocation;
// header values and the thumbprint are already shared (header cache, key).
func compactInto(box *resultBox, res *Result, is *issuer) {
	r := &box.Result
	*r = *res
	r.cached = true
	r.Claims = slices.Clone(res.Claims)

	type span struct{ i, j int }
	var b strings.Builder
	b.Grow(ownedStringBytes(res, is))
	add := func(s string) span {
		i := b.Len()
		b.WriteString(s)
		return span{i, b.Len()}
	}
	sub, jti := add(res.Subject), add(res.ID)
	var jkt, x5t span
	var other []span
	if cnf := res.Confirmation; cnf != nil {
		jkt, x5t = add(cnf.JKT), add(cnf.X5tS256)
		for _, o := range cnf.Other {
			other = append(other, add(o))
		}
	}
	iss := span{-1, -1}
	if res.Issuer != is.cfg.Issuer {
		iss = add(res.Issuer)
	}
	shared := configuredAudience(res, is)
	var aud1 span
	var auds []span
	switch {
	case shared:
	case len(res.Audience) == 1:
		aud1 = add(res.Audience[0])
	default:
		for _, a := range res.Audience {
			auds = append(auds, add(a))
		}
	}

	all := b.String()
	r.Subject, r.ID = all[sub.i:sub.j], all[jti.i:jti.j]
	if res.Confirmation != nil {
		// The decoded cnf holds each member name in an allocation of
		// its own (json.Unmarshal): as many as the claims have room for.
		r.Confirmation = &Confirmation{JKT: all[jkt.i:jkt.j], X5tS256: all[x5t.i:x5t.j]}
		if len(other) > 0 {
			r.Confirmation.Other = make([]string, len(other))
			for i, o := range other {
				r.Confirmation.Other[i] = all[o.i:o.j]
			}
		}
	}
	r.Issuer = is.cfg.Issuer
	if iss.i >= 0 {
		r.Issuer = all[iss.i:iss.j]
	}
	switch {
	case shared:
		i := slices.Index(is.cfg.Audiences, res.Audience[0])
		r.Audience = is.cfg.Audiences[i : i+1 : i+1]
	case len(res.Audience) == 1:
		box.aud[0] = all[aud1.i:aud1.j]
		r.Audience = box.aud[:]
	case res.Audience != nil:
		r.Audience = make([]string, len(auds))
		for i, a := range auds {
			r.Audience[i] = all[a.i:a.j]
		}
	}
	if res.Extracted != nil {
		r.Extracted = make(map[string]string, len(res.Extracted))
		for k, val := range res.Extracted {
			r.Extracted[k] = strings.Clone(val)
		}
	}
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

// TokenCache is a verified-token cache that outlives a [Verifier]: the
// successive verifiers of a process that reloads its configuration share
// it ([Options.Cache]), so that the verdicts of the issuers a reload leaves
// unchanged stay cached. Each verifier answers only verdicts of its own
// issuers. It is safe for concurrent use; it holds no goroutine and needs
// no Close.
type TokenCache struct{ c *tokenCache }

// NewTokenCache returns an empty cache bounded by o (defaults as in
// [TokenCacheOptions]). It refuses negative bounds and a zero MaxEntries
// (a cache that is off is no cache: leave [Options.Cache] nil).
func NewTokenCache(o TokenCacheOptions) (*TokenCache, error) {
	if o.MaxEntries <= 0 || o.MaxBytes < 0 {
		return nil, errors.New("verify: a shared token cache needs MaxEntries > 0 and MaxBytes >= 0")
	}
	return &TokenCache{c: newTokenCache(o.withDefaults(), true)}, nil
}

// Keep drops every cached verdict whose issuer is not one of v's: after a
// reload has swapped v in, the verdicts of the issuers it removed or
// changed go. A verifier still finishing requests under the old
// configuration may cache such a verdict afterwards; no verifier without
// its issuer ever answers it, and the next lookup of it drops it.
func (t *TokenCache) Keep(v *Verifier) { t.c.keep(newIssuerSet(v.issuers)) }

// Stats returns the cache's counters since it was made.
func (t *TokenCache) Stats() CacheStats { return t.c.stats() }

// withDefaults applies the default MaxBytes.
func (o TokenCacheOptions) withDefaults() TokenCacheOptions {
	if o.MaxBytes == 0 {
		o.MaxBytes = max(int64(o.MaxEntries)*1024, 1<<20)
	}
	return o
}

// issuerSet is the compiled issuers of one verifier, for the ownership
// check of a shared cache's hit. A nil *issuerSet holds every issuer.
type issuerSet struct {
	list []*issuer
	m    map[*issuer]struct{} // when list is long
}

// issuerSetScan is the size up to which a linear scan beats a map.
const issuerSetScan = 8

func newIssuerSet(list []*issuer) *issuerSet {
	s := &issuerSet{list: slices.Clone(list)}
	if len(list) > issuerSetScan {
		s.m = make(map[*issuer]struct{}, len(list))
		for _, is := range list {
			s.m[is] = struct{}{}
		}
	}
	return s
}

func (s *issuerSet) has(is *issuer) bool {
	return s == nil || s.find(is) // inlined: a verifier's own cache pays one nil check
}

func (s *issuerSet) find(is *issuer) bool {
	if s.m != nil {
		_, ok := s.m[is]
		return ok
	}
	for _, x := range s.list {
		if x == is {
			return true
		}
	}
	return false
}
