package revoke

import (
	"hash/maphash"
	"maps"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// This file is the request path's half: an index of the entries that
// answers "is this token revoked?" without a lock and without allocating.
// It is an open-addressing hash table of immutable nodes, one per
// (issuer, value) pair, whose slots a single writer fills with atomic
// stores: readers never wait on writers, and an Add costs O(1), not a copy
// of a million entries (a snapshot swapped whole would). The table is
// rebuilt, and swapped through an atomic pointer, only when it grows or
// when many of its nodes are empty.

// Token is what the index reads of a verified token (or of an opaque
// token's introspection answer). Empty strings are absent claims; a zero
// IssuedAt is an absent iat.
type Token struct {
	JTI, SID, Sub, ClientID, AZP string
	IssuedAt                     time.Time
}

// Index holds the live entries of a store, for lookup. Its zero value is
// not usable: build it with [NewIndex]. Check is safe for concurrent use
// with everything; the other methods serialize among themselves. The store
// that owns an Index is its only writer.
type Index struct {
	seed     maphash.Seed
	empty    uint64 // maphash of "" under seed: the issuer node's value
	maxStale time.Duration
	created  time.Time

	tab      atomic.Pointer[table]
	syncedAt atomic.Int64 // unix nanoseconds of the last proof the copy was whole; 0 never

	mu      sync.Mutex // writers
	entries map[string]Entry
	groups  map[pair][]string // the IDs of the entries naming each pair
	issuers map[string]string // each issuer's one string ([Index.intern])
	swept   time.Time
}

// table is the hash table readers probe. Its slots are written in place
// by the single writer (under Index.mu); a grown table replaces it whole.
type table struct {
	mask  uint64
	slots []slot
	used  int // slots with a node; writer only
	dead  int // slots whose node holds nothing; writer only
	// kinds has bit 1<<k set when a node of kind k may exist: a token
	// claim of a kind no entry has is not looked up.
	kinds atomic.Uint32
}

type slot struct {
	h atomic.Uint64 // 0: empty
	n atomic.Pointer[node]
}

// node is everything the index knows about one (issuer, value) pair:
// value "" is the issuer itself. It is immutable; a change stores a new
// one in the slot.
type node struct {
	issuer, value string
	n             int // the entries it was built from
	// until is, per kind, the unix nanoseconds before which the kind's
	// entry holds (0: no entry of that kind); before is the issued_before
	// of the cut-off kinds (sub, client_id, issuer), the latest of their
	// entries.
	until  [numKinds]int64
	before [numKinds]int64
}

// Kind indexes in node arrays and the table's kinds bits.
const (
	kJTI = iota
	kSID
	kSub
	kClient
	kIssuer
	numKinds
)

func kindIndex(k Kind) int {
	switch k {
	case KindJTI:
		return kJTI
	case KindSID:
		return kSID
	case KindSub:
		return kSub
	case KindClientID:
		return kClient
	case KindIssuer:
		return kIssuer
	}
	return -1
}

// NewIndex returns an empty index. maxStale, if positive, makes
// [Index.Check] answer [ErrStale] once the copy was last proven whole
// ([Index.Synced]) longer ago than that; an index that never synced is
// stale then. Zero means the copy is the store itself (store: memory) and
// never stale.
func NewIndex(maxStale time.Duration) *Index {
	x := &Index{seed: maphash.MakeSeed(), maxStale: maxStale, created: time.Now(), entries: map[string]Entry{}, groups: map[pair][]string{}, issuers: map[string]string{}}
	x.empty = maphash.String(x.seed, "")
	x.tab.Store(newTable(64))
	return x
}

func newTable(size int) *table {
	n := 64
	if size > n {
		n = 1 << bits.Len(uint(size-1))
	}
	return &table{mask: uint64(n - 1), slots: make([]slot, n)}
}

// Check reports whether the token t of the configured issuer is revoked at
// now: nil when it is not, [ErrRevoked] when an entry matches, [ErrStale]
// when the copy is too old to tell (the caller fails closed). A token
// matches an entry of its issuer when its jti or sid equals the entry's;
// when its sub, client_id or azp equals and its iat is before the entry's
// issued_before; when its iat is before an issuer entry's issued_before. A
// token without iat matches every issued_before entry that names it. It
// does not allocate and never blocks.
func (x *Index) Check(issuer string, t *Token, now time.Time) error {
	if x.maxStale > 0 {
		if s := x.syncedAt.Load(); s == 0 || now.UnixNano()-s > int64(x.maxStale) {
			return ErrStale
		}
	}
	tab := x.tab.Load()
	kinds := tab.kinds.Load()
	if kinds == 0 {
		return nil
	}
	ih := maphash.String(x.seed, issuer)
	n := now.UnixNano()
	iat := int64(0)
	if !t.IssuedAt.IsZero() {
		iat = t.IssuedAt.UnixNano()
	}
	if kinds&(1<<kIssuer) != 0 && x.match(tab, ih, issuer, "", kIssuer, n, iat) {
		return ErrRevoked
	}
	if kinds&(1<<kJTI) != 0 && x.match(tab, ih, issuer, t.JTI, kJTI, n, iat) ||
		kinds&(1<<kSID) != 0 && x.match(tab, ih, issuer, t.SID, kSID, n, iat) ||
		kinds&(1<<kSub) != 0 && x.match(tab, ih, issuer, t.Sub, kSub, n, iat) {
		return ErrRevoked
	}
	if kinds&(1<<kClient) != 0 {
		if x.match(tab, ih, issuer, t.ClientID, kClient, n, iat) ||
			t.AZP != t.ClientID && x.match(tab, ih, issuer, t.AZP, kClient, n, iat) {
			return ErrRevoked
		}
	}
	return nil
}

// match reports whether the node of (issuer, value) has a live entry of
// kind k that the token's iat (0: none) falls under. value "" is looked
// up only for the issuer kind: an absent claim names nothing.
func (x *Index) match(tab *table, ih uint64, issuer, value string, k int, now, iat int64) bool {
	if value == "" && k != kIssuer {
		return false
	}
	nd := tab.find(x.hash(ih, value), issuer, value)
	if nd == nil || now >= nd.until[k] {
		return false
	}
	switch k {
	case kJTI, kSID:
		return true
	}
	return iat == 0 || iat < nd.before[k]
}

// hash mixes the issuer's hash into the value's; never 0 (an empty slot).
func (x *Index) hash(ih uint64, value string) uint64 {
	vh := x.empty
	if value != "" {
		vh = maphash.String(x.seed, value)
	}
	h := vh ^ (ih * 0x9e3779b97f4a7c15)
	if h == 0 {
		h = 1
	}
	return h
}

// find returns the node of (issuer, value) with hash h, or nil.
func (t *table) find(h uint64, issuer, value string) *node {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		sh := s.h.Load()
		if sh == 0 {
			return nil
		}
		if sh == h {
			if nd := s.n.Load(); nd != nil && nd.value == value && nd.issuer == issuer {
				return nd
			}
		}
	}
}

// Synced records that the copy was proven whole as of at (a store's full
// read, or a check that it missed no change).
func (x *Index) Synced(at time.Time) {
	v := at.UnixNano()
	for {
		old := x.syncedAt.Load()
		if v <= old || x.syncedAt.CompareAndSwap(old, v) {
			return
		}
	}
}

// SyncedAt returns when the copy was last proven whole; zero when never.
func (x *Index) SyncedAt() time.Time {
	if s := x.syncedAt.Load(); s != 0 {
		return time.Unix(0, s)
	}
	return time.Time{}
}

// Age returns how old the copy is at now: the time since it was last
// proven whole, or since the index was made when never; zero for an index
// that is never stale (max staleness zero).
func (x *Index) Age(now time.Time) time.Duration {
	if x.maxStale <= 0 {
		return 0
	}
	if s := x.syncedAt.Load(); s != 0 {
		return max(0, now.Sub(time.Unix(0, s)))
	}
	return max(0, now.Sub(x.created))
}

// Stale reports whether [Index.Check] answers [ErrStale] at now.
func (x *Index) Stale(now time.Time) bool {
	if x.maxStale <= 0 {
		return false
	}
	s := x.syncedAt.Load()
	return s == 0 || now.UnixNano()-s > int64(x.maxStale)
}

// Put adds e (or replaces the entry of its ID), unless it has expired at
// now. It is how a store publishes an entry it stored.
func (x *Index) Put(e Entry, now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sweepLocked(now)
	if !e.ExpiresAt.After(now) || kindIndex(e.Kind) < 0 {
		return
	}
	if old, ok := x.entries[e.ID]; ok {
		delete(x.entries, e.ID)
		x.unlink(old.pair(), old.ID)
		x.refresh(old.pair())
	}
	e = x.intern(e)
	x.entries[e.ID] = e
	x.link(e.pair(), e.ID)
	x.refresh(e.pair())
}

// intern makes e share its issuer, kind and source strings with every
// other entry (a decoded entry has copies of its own): at 100 000 entries
// that is 300 000 fewer objects for the garbage collector to mark in
// every cycle (docs/BENCHMARKS.md, revocation on the hot path). Called
// with x.mu held.
func (x *Index) intern(e Entry) Entry {
	if iss, ok := x.issuers[e.Issuer]; ok {
		e.Issuer = iss
	} else {
		x.issuers[e.Issuer] = e.Issuer
	}
	for _, k := range [...]Kind{KindJTI, KindSID, KindSub, KindClientID, KindIssuer} {
		if e.Kind == k {
			e.Kind = k
		}
	}
	for _, src := range [...]Source{SourceBackchannelLogout, SourceSSFPush, SourceSSFPoll, SourceAdmin} {
		if e.Source == src {
			e.Source = src
		}
	}
	return e
}

// Remove removes the entry id; it reports whether there was one.
func (x *Index) Remove(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[id]
	if !ok {
		return false
	}
	delete(x.entries, id)
	x.unlink(e.pair(), id)
	x.refresh(e.pair())
	return true
}

// Replace makes es, but those expired at now, the whole content of the
// index: a store's full read.
func (x *Index) Replace(es []Entry, now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.entries = make(map[string]Entry, len(es))
	x.groups = map[pair][]string{}
	for _, e := range es {
		if e.ExpiresAt.After(now) && kindIndex(e.Kind) >= 0 {
			if old, ok := x.entries[e.ID]; ok {
				x.unlink(old.pair(), old.ID)
			}
			e = x.intern(e)
			x.entries[e.ID] = e
			x.link(e.pair(), e.ID)
		}
	}
	x.swept = now
	x.rebuild()
}

// Get returns the live entry id.
func (x *Index) Get(id string, now time.Time) (Entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[id]
	if !ok || !e.ExpiresAt.After(now) {
		return Entry{}, false
	}
	return e, true
}

// List returns the live entries of issuer ("" every issuer), oldest
// first (then by ID).
func (x *Index) List(issuer string, now time.Time) []Entry {
	x.mu.Lock()
	x.sweepLocked(now)
	var out []Entry
	for _, e := range x.entries {
		if issuer == "" || e.Issuer == issuer {
			out = append(out, e)
		}
	}
	x.mu.Unlock()
	slices.SortFunc(out, func(a, b Entry) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return out
}

// Counts returns the number of live entries per issuer.
func (x *Index) Counts(now time.Time) map[string]int {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sweepLocked(now)
	c := map[string]int{}
	for _, e := range x.entries {
		c[e.Issuer]++
	}
	return c
}

// Len returns the number of entries held, expired ones not yet swept
// included.
func (x *Index) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.entries)
}

// sweepInterval is how often a writer drops expired entries. Check ignores
// them anyway (each node keeps its entries' expiry); sweeping only returns
// their memory.
const sweepInterval = time.Minute

func (x *Index) sweepLocked(now time.Time) {
	if now.Sub(x.swept) < sweepInterval {
		return
	}
	x.swept = now
	n := len(x.entries)
	maps.DeleteFunc(x.entries, func(_ string, e Entry) bool {
		if e.ExpiresAt.After(now) {
			return false
		}
		x.unlink(e.pair(), e.ID)
		return true
	})
	if len(x.entries) != n {
		x.rebuild()
	}
}

// nodeValue is the value of e's node: "" for an issuer entry.
func (e Entry) nodeValue() string {
	if e.Kind == KindIssuer {
		return ""
	}
	return e.Value
}

// pair names a node: an issuer and a value ("" the issuer itself).
type pair struct{ issuer, value string }

func (e Entry) pair() pair { return pair{e.Issuer, e.nodeValue()} }

// link records that the entry id names p; unlink forgets it.
func (x *Index) link(p pair, id string) { x.groups[p] = append(x.groups[p], id) }

func (x *Index) unlink(p pair, id string) {
	ids := x.groups[p]
	if i := slices.Index(ids, id); i >= 0 {
		ids = slices.Delete(slices.Clone(ids), i, i+1)
	}
	if len(ids) == 0 {
		delete(x.groups, p)
		return
	}
	x.groups[p] = ids
}

// node builds the node of p from the entries that name it.
func (x *Index) node(p pair) *node {
	nd := &node{issuer: p.issuer, value: p.value}
	for _, id := range x.groups[p] {
		nd.merge(x.entries[id])
	}
	return nd
}

// merge adds e to the node.
func (nd *node) merge(e Entry) {
	k := kindIndex(e.Kind)
	nd.n++
	u := e.ExpiresAt.UnixNano()
	switch k {
	case kJTI, kSID:
		nd.until[k] = max(nd.until[k], u)
	default:
		b := e.IssuedBefore.UnixNano()
		// The latest issued_before decides: an entry with an earlier one
		// names only tokens it names too, and cannot outlive it by more
		// than the time between them (entries live for the same
		// retention, which outlives every token's lifetime).
		if nd.until[k] == 0 || b > nd.before[k] || b == nd.before[k] && u > nd.until[k] {
			nd.before[k], nd.until[k] = b, u
		}
	}
}

func (nd *node) kinds() uint32 {
	var k uint32
	for i, u := range nd.until {
		if u != 0 {
			k |= 1 << i
		}
	}
	return k
}

// refresh stores the node of p, rebuilt from its entries, in the table
// (growing the table first when needed).
func (x *Index) refresh(p pair) {
	tab := x.tab.Load()
	h := x.hash(maphash.String(x.seed, p.issuer), p.value)
	nd := x.node(p)
	i := h & tab.mask
	for ; ; i = (i + 1) & tab.mask {
		sh := tab.slots[i].h.Load()
		if sh == 0 {
			break
		}
		if old := tab.slots[i].n.Load(); sh == h && old.value == p.value && old.issuer == p.issuer {
			switch {
			case nd.n == 0 && old.n > 0:
				tab.dead++
			case nd.n > 0 && old.n == 0:
				tab.dead--
			}
			tab.kinds.Store(tab.kinds.Load() | nd.kinds())
			tab.slots[i].n.Store(nd)
			if tab.dead > 1024 && tab.dead > tab.used/2 {
				x.rebuild()
			}
			return
		}
	}
	if nd.n == 0 {
		return
	}
	if (tab.used+1)*4 > len(tab.slots)*3 {
		x.rebuild() // groups hold the new entry already
		return
	}
	tab.kinds.Store(tab.kinds.Load() | nd.kinds())
	// The node first, then the hash that makes readers look at it.
	tab.slots[i].n.Store(nd)
	tab.slots[i].h.Store(h)
	tab.used++
}

// rebuild makes a table of the entries held, sized for them, and swaps it
// in.
func (x *Index) rebuild() {
	tab := newTable(len(x.groups) * 2)
	var kinds uint32
	for p := range x.groups {
		nd := x.node(p)
		kinds |= nd.kinds()
		h := x.hash(maphash.String(x.seed, p.issuer), p.value)
		i := h & tab.mask
		for tab.slots[i].h.Load() != 0 {
			i = (i + 1) & tab.mask
		}
		tab.slots[i].n.Store(nd)
		tab.slots[i].h.Store(h)
		tab.used++
	}
	tab.kinds.Store(kinds)
	x.tab.Store(tab)
}
