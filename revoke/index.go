package revoke

import (
	"hash/maphash"
	"math"
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
// when much of what it holds is garbage.
//
// Nothing it holds per entry contains a pointer. Entries, nodes and their
// strings live in flat chunks (records, nodes, bytes) addressed by
// integers, so the garbage collector marks a million entries as a few
// hundred pointer-free objects and never scans them: an index of
// pointers (a map of Entry values, a node with two strings each) made
// every collection of a loaded server mark ~50 MB at 100 000 entries
// (docs/BENCHMARKS.md, revocation on the hot path).

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
	// keep is how long past its expiry an entry is held (swept later,
	// still read by Replace and Put): the store's retention, so that a
	// clock stepped ahead and back again does not lose what the store
	// acknowledged (the memory store's log and Redis hold an entry as long).
	// Check, Get, List and Counts see only live entries.
	keep time.Duration

	tab      atomic.Pointer[table]
	syncedAt atomic.Int64 // unix nanoseconds of the last proof the copy was whole; 0 never

	mu      sync.Mutex        // writers; everything below
	recs    []rec             // the entries, live and dead, in the table's bytes
	ids     map[uint64]int32  // maphash of an ID → its first record (then rec.idNext)
	strs    map[uint64]strRef // interned issuer and source strings, by maphash
	live    int               // live records
	garbage int               // dead records and replaced nodes since the last rebuild
	swept   time.Time
}

// table is the hash table readers probe, with the nodes and bytes it
// names. Its slots are written in place by the single writer (under
// Index.mu); a rebuild replaces it whole, with fresh nodes and bytes.
type table struct {
	mask  uint64
	slots []slot
	nodes chunks[node]
	bytes arena
	used  int // slots with a node; writer only
	dead  int // slots whose node holds nothing; writer only
	// kinds has bit 1<<k set when a node of kind k may exist: a token
	// claim of a kind no entry has is not looked up.
	kinds atomic.Uint32
}

// slot is one place of the table: the pair's hash (0: empty) and its
// node's number plus one (0: none yet).
type slot struct {
	h atomic.Uint64
	n atomic.Uint32
}

// node is everything the index knows about one (issuer, value) pair:
// value "" is the issuer itself. It is immutable once its slot names it;
// a change appends a new one and stores its number in the slot.
type node struct {
	issuer, value strRef
	head          int32 // the first record of the pair (then rec.next); -1 none
	n             int32 // the entries it was built from
	// last is, per kind, the unix nanoseconds before which some entry of
	// the kind holds (0: none): all a jti or sid entry needs, and what a
	// token without iat is matched by. For the cut-off kinds (sub,
	// client_id, issuer), before is the latest issued_before of their
	// entries and until when that entry ends. A token with iat is matched
	// by that entry alone: an entry with an earlier issued_before names
	// only tokens it names too, and once it has ended those tokens have
	// too (they were issued before it was created, and no token outlives
	// the retention: config refuses a max_lifetime above it, and an
	// issued_before in the future).
	last   [numKinds]int64
	until  [numKinds]int64
	before [numKinds]int64
}

// rec is one entry, as the writer keeps it. Times are unix nanoseconds, 0
// for a zero time.
type rec struct {
	id, issuer, value, source strRef
	before, created, expires  int64
	idNext, next              int32 // the next record with the same ID hash, of the same pair; -1 none
	kind                      uint8 // kJTI…
	live                      bool
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

// kinds is kindIndex's inverse.
var kinds = [numKinds]Kind{KindJTI, KindSID, KindSub, KindClientID, KindIssuer}

// NewIndex returns an empty index. maxStale, if positive, makes
// [Index.Check] answer [ErrStale] once the copy was last proven whole
// ([Index.Synced]) longer ago than that; an index that never synced is
// stale then. Zero means the copy is the store itself (store: memory) and
// never stale.
func NewIndex(maxStale time.Duration) *Index {
	x := &Index{seed: maphash.MakeSeed(), maxStale: maxStale, created: time.Now(), ids: map[uint64]int32{}, strs: map[uint64]strRef{}}
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
	if x.maxStale > 0 { // Stale, written out: the hot path
		if s := x.syncedAt.Load(); s == 0 || absDiff(now.UnixNano(), s) > x.maxStale {
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
	iat := nanos(t.IssuedAt) // 0 without one; saturated, never wrapped

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
	// tab.find, without the call: most lookups miss at the first empty
	// slot, and the call was a fifth of their cost.
	h := x.hash(ih, value)
	var nd *node
	for i := h & tab.mask; ; i = (i + 1) & tab.mask {
		sh := tab.slots[i].h.Load()
		if sh == 0 {
			return false
		}
		if sh == h {
			if nd = tab.nodeAt(i, issuer, value); nd != nil {
				break
			}
		}
	}
	if now >= nd.last[k] {
		return false
	}
	switch k {
	case kJTI, kSID:
		return true
	}
	return iat == 0 || iat < nd.before[k] && now < nd.until[k]
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

// find returns the slot and the node of (issuer, value) with hash h; a
// nil node when the table has none (and then the empty slot where it
// would go).
func (t *table) find(h uint64, issuer, value string) (uint64, *node) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sh := t.slots[i].h.Load()
		if sh == 0 {
			return i, nil
		}
		if sh == h {
			if nd := t.nodeAt(i, issuer, value); nd != nil {
				return i, nd
			}
		}
	}
}

// nodeAt returns the node in slot i if it is (issuer, value)'s.
func (t *table) nodeAt(i uint64, issuer, value string) *node {
	ref := t.slots[i].n.Load()
	if ref == 0 {
		return nil
	}
	nd := t.nodes.at(ref - 1)
	if t.bytes.equal(nd.value, value) && t.bytes.equal(nd.issuer, issuer) {
		return nd
	}
	return nil
}

// Synced records that the copy was proven whole as of at (a store's full
// read, or a check that it missed no change). The store's follower is its
// one caller, in the order of its proofs, so the latest call wins even when
// at is earlier than the last: a clock stepped back must not leave a proof
// taken at the clock that ran ahead in force.
func (x *Index) Synced(at time.Time) { x.syncedAt.Store(at.UnixNano()) }

// SyncedAt returns when the copy was last proven whole; zero when never.
func (x *Index) SyncedAt() time.Time {
	if s := x.syncedAt.Load(); s != 0 {
		return time.Unix(0, s)
	}
	return time.Time{}
}

// Age returns how old the copy is at now: the time since it was last
// proven whole, or since the index was made when never; zero for an index
// that is never stale (max staleness zero). A proof later than now (the
// clock stepped back since it was taken) counts by how far it is ahead:
// it tells nothing of the copy at now.
func (x *Index) Age(now time.Time) time.Duration {
	if x.maxStale <= 0 {
		return 0
	}
	if s := x.syncedAt.Load(); s != 0 {
		return absDiff(now.UnixNano(), s)
	}
	return max(0, now.Sub(x.created))
}

// Stale reports whether [Index.Check] answers [ErrStale] at now: never
// proven whole, or last proven more than max staleness away from now,
// either side (a proof ahead of now was taken at a clock that has since
// stepped back: taken as fresh, it kept a copy Redis no longer fed
// "fresh" for as long as the step).
func (x *Index) Stale(now time.Time) bool {
	if x.maxStale <= 0 {
		return false
	}
	s := x.syncedAt.Load()
	return s == 0 || absDiff(now.UnixNano(), s) > x.maxStale
}

// absDiff is |a - b| nanoseconds.
func absDiff(a, b int64) time.Duration {
	if a < b {
		a, b = b, a
	}
	return time.Duration(a - b)
}

// Put adds e (or replaces the entry of its ID), unless it has expired at
// now. It is how a store publishes an entry it stored.
func (x *Index) Put(e Entry, now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sweepLocked(now)
	if !e.ExpiresAt.After(now.Add(-x.keep)) || kindIndex(e.Kind) < 0 {
		return
	}
	tab := x.tab.Load()
	if i := x.lookup(tab, e.ID); i >= 0 {
		x.remove(tab, i)
	}
	x.insert(x.tab.Load(), x.add(x.tab.Load(), e), true)
	x.maybeRebuild()
}

// Remove removes the entry id; it reports whether there was one.
func (x *Index) Remove(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	tab := x.tab.Load()
	i := x.lookup(tab, id)
	if i < 0 {
		return false
	}
	x.remove(tab, i)
	x.maybeRebuild()
	return true
}

// Replace makes es, but those expired at now (for longer than the index
// keeps them), the whole content of the index: a store's full read.
func (x *Index) Replace(es []Entry, now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.recs, x.live, x.garbage = nil, 0, 0
	clear(x.ids)
	clear(x.strs)
	tab := newTable(2 * (len(es) + 1))
	cut := now.Add(-x.keep)
	for _, e := range es {
		if e.ExpiresAt.After(cut) && kindIndex(e.Kind) >= 0 {
			if i := x.lookup(tab, e.ID); i >= 0 {
				x.remove(tab, i)
			}
			x.insert(tab, x.add(tab, e), false)
		}
	}
	x.swept = now
	x.tab.Store(tab)
	x.maybeRebuild() // replaced duplicates
}

// Get returns the live entry id.
func (x *Index) Get(id string, now time.Time) (Entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	tab := x.tab.Load()
	i := x.lookup(tab, id)
	if i < 0 || x.recs[i].expires <= now.UnixNano() {
		return Entry{}, false
	}
	return x.entry(tab, &x.recs[i]), true
}

// List returns the live entries of issuer ("" every issuer), oldest
// first (then by ID).
func (x *Index) List(issuer string, now time.Time) []Entry {
	x.mu.Lock()
	x.sweepLocked(now)
	tab := x.tab.Load()
	n := now.UnixNano()
	var out []Entry
	for i := range x.recs {
		r := &x.recs[i]
		if r.live && r.expires > n && (issuer == "" || tab.bytes.equal(r.issuer, issuer)) {
			out = append(out, x.entry(tab, r))
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
	tab := x.tab.Load()
	n := now.UnixNano()
	byRef := map[strRef]int{}
	for i := range x.recs {
		if r := &x.recs[i]; r.live && r.expires > n {
			byRef[r.issuer]++
		}
	}
	c := make(map[string]int, len(byRef))
	for ref, n := range byRef {
		c[tab.bytes.string(ref)] += n
	}
	return c
}

// Len returns the number of entries held, expired ones not yet swept
// included.
func (x *Index) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.live
}

// sweepInterval is how often a writer drops expired entries (those expired
// for longer than the index keeps them). Check ignores them anyway (each
// node keeps its entries' expiry); sweeping only returns their memory.
const sweepInterval = time.Minute

func (x *Index) sweepLocked(now time.Time) {
	if d := now.Sub(x.swept); d >= 0 && d < sweepInterval {
		return
	}
	x.swept = now
	n := now.Add(-x.keep).UnixNano()
	expired := false
	for i := range x.recs {
		if r := &x.recs[i]; r.live && r.expires <= n {
			r.live = false
			x.live--
			expired = true
		}
	}
	if expired {
		x.rebuild(x.tab.Load())
	}
}

// lookup returns the live record of id in tab's bytes, or -1.
func (x *Index) lookup(tab *table, id string) int32 {
	i, ok := x.ids[maphash.String(x.seed, id)]
	if !ok {
		return -1
	}
	for ; i >= 0; i = x.recs[i].idNext {
		if r := &x.recs[i]; r.live && tab.bytes.equal(r.id, id) {
			return i
		}
	}
	return -1
}

// add appends e's record (strings into tab's bytes) and links its ID; it
// returns the record's number.
func (x *Index) add(tab *table, e Entry) int32 {
	r := rec{
		id: tab.bytes.add(e.ID), issuer: x.intern(tab, e.Issuer), source: x.intern(tab, string(e.Source)),
		before: nanos(e.IssuedBefore), created: nanos(e.CreatedAt), expires: nanos(e.ExpiresAt),
		next: -1, kind: uint8(kindIndex(e.Kind)), live: true,
	}
	if r.kind != kIssuer {
		r.value = tab.bytes.add(e.Value)
	}
	i := int32(len(x.recs))
	h := maphash.String(x.seed, e.ID)
	if head, ok := x.ids[h]; ok {
		r.idNext = head
	} else {
		r.idNext = -1
	}
	x.ids[h] = i
	x.recs = append(x.recs, r)
	x.live++
	return i
}

// intern returns s in tab's bytes, shared with every other string equal to
// it that was interned (issuers and sources: a few strings, many times).
func (x *Index) intern(tab *table, s string) strRef {
	h := maphash.String(x.seed, s)
	if ref, ok := x.strs[h]; ok && tab.bytes.equal(ref, s) {
		return ref
	}
	ref := tab.bytes.add(s)
	x.strs[h] = ref
	return ref
}

// remove kills record i: it leaves its ID's chain and its pair's node.
func (x *Index) remove(tab *table, i int32) {
	r := &x.recs[i]
	r.live = false
	x.live--
	x.garbage++
	h := maphash.String(x.seed, tab.bytes.string(r.id))
	if x.ids[h] == i {
		if r.idNext >= 0 {
			x.ids[h] = r.idNext
		} else {
			delete(x.ids, h)
		}
	} else {
		for j := x.ids[h]; j >= 0; j = x.recs[j].idNext {
			if x.recs[j].idNext == i {
				x.recs[j].idNext = r.idNext
				break
			}
		}
	}
	ph, issuer, value := x.pairOf(tab, r)
	si, old := tab.find(ph, issuer, value)
	if old == nil {
		return
	}
	nd := node{issuer: old.issuer, value: old.value, head: -1}
	var last int32 = -1
	for j := old.head; j >= 0; j = x.recs[j].next {
		if j == i {
			continue
		}
		if last < 0 {
			nd.head = j
		} else {
			x.recs[last].next = j
		}
		last = j
		nd.merge(&x.recs[j])
	}
	if last >= 0 {
		x.recs[last].next = -1
	}
	r.next = -1
	if nd.n == 0 {
		tab.dead++
	}
	x.publish(tab, si, nd, true)
}

// insert adds record i to its pair's node; publish says whether readers
// may already see tab (then a changed node is a new one).
func (x *Index) insert(tab *table, i int32, published bool) {
	r := &x.recs[i]
	ph, issuer, value := x.pairOf(tab, r)
	si, old := tab.find(ph, issuer, value)
	nd := node{issuer: r.issuer, value: r.value, head: i}
	if old != nil {
		nd = *old
		r.next = nd.head
		nd.head = i
		if nd.n == 0 {
			tab.dead--
		}
	} else if (tab.used+1)*4 > len(tab.slots)*3 {
		// Grow: a rebuild places every live record, this one included.
		x.rebuild(tab)
		return
	}
	nd.merge(r)
	tab.kinds.Store(tab.kinds.Load() | nd.kinds())
	if old != nil {
		x.publish(tab, si, nd, published)
		return
	}
	// The node first, then the hash that makes readers look at it.
	tab.slots[si].n.Store(tab.nodes.add(nd) + 1)
	tab.slots[si].h.Store(ph)
	tab.used++
}

// publish stores nd as the node of slot si: in place while no reader can
// see tab, else as a new node (the old one becomes garbage).
func (x *Index) publish(tab *table, si uint64, nd node, published bool) {
	ref := tab.slots[si].n.Load()
	if !published {
		*tab.nodes.at(ref - 1) = nd
		return
	}
	tab.slots[si].n.Store(tab.nodes.add(nd) + 1)
	x.garbage++
}

// pairOf returns the hash, issuer and value of record r's node (value ""
// for an issuer entry).
func (x *Index) pairOf(tab *table, r *rec) (uint64, string, string) {
	issuer := tab.bytes.string(r.issuer)
	value := ""
	if r.kind != kIssuer {
		value = tab.bytes.string(r.value)
	}
	return x.hash(maphash.String(x.seed, issuer), value), issuer, value
}

// maybeRebuild rebuilds when garbage (dead records, replaced nodes and the
// bytes they hold) outweighs what is live, or dead slots half the table.
func (x *Index) maybeRebuild() {
	tab := x.tab.Load()
	if x.garbage > 1024 && x.garbage > x.live || tab.dead > 1024 && tab.dead > tab.used/2 {
		x.rebuild(tab)
	}
}

// rebuild makes a table of the live records (whose strings are in old's
// bytes), sized for them, with fresh nodes and bytes, and swaps it in.
func (x *Index) rebuild(old *table) {
	tab := newTable(2 * (x.live + 1))
	recs := make([]rec, 0, x.live)
	clear(x.ids)
	clear(x.strs)
	for i := range x.recs {
		r := &x.recs[i]
		if !r.live {
			continue
		}
		n := rec{
			id: tab.bytes.add(old.bytes.string(r.id)), issuer: x.intern(tab, old.bytes.string(r.issuer)),
			source: x.intern(tab, old.bytes.string(r.source)), value: tab.bytes.add(old.bytes.string(r.value)),
			before: r.before, created: r.created, expires: r.expires, next: -1, kind: r.kind, live: true,
		}
		j := int32(len(recs))
		h := maphash.String(x.seed, old.bytes.string(r.id))
		n.idNext = -1
		if head, ok := x.ids[h]; ok {
			n.idNext = head
		}
		x.ids[h] = j
		recs = append(recs, n)
	}
	x.recs, x.garbage = recs, 0
	for i := range x.recs {
		x.insert(tab, int32(i), false)
	}
	x.tab.Store(tab)
}

// entry returns record r as an Entry.
func (x *Index) entry(tab *table, r *rec) Entry {
	e := Entry{
		ID: tab.bytes.string(r.id), Issuer: tab.bytes.string(r.issuer), Kind: kinds[r.kind],
		IssuedBefore: fromNanos(r.before), CreatedAt: fromNanos(r.created), ExpiresAt: fromNanos(r.expires),
		Source: Source(tab.bytes.string(r.source)),
	}
	if r.kind != kIssuer {
		e.Value = tab.bytes.string(r.value)
	}
	return e
}

// merge adds record r to the node.
func (nd *node) merge(r *rec) {
	k := int(r.kind)
	nd.n++
	u := r.expires
	nd.last[k] = max(nd.last[k], u)
	if k == kJTI || k == kSID {
		return
	}
	if b := r.before; nd.until[k] == 0 || b > nd.before[k] || b == nd.before[k] && u > nd.until[k] {
		nd.before[k], nd.until[k] = b, u
	}
}

func (nd *node) kinds() uint32 {
	var k uint32
	for i, u := range nd.last {
		if u != 0 {
			k |= 1 << i
		}
	}
	return k
}

// nanos is t in unix nanoseconds, 0 for the zero time; fromNanos the
// inverse (in UTC).
// Times outside what an int64 of nanoseconds holds (before 1678, after
// 2262: an entry an older version stored) keep their order at the ends.
func nanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Before(minNanos):
		return math.MinInt64 + 1
	case t.After(maxNanos):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// minNanos and maxNanos bound the times UnixNano holds.
var minNanos, maxNanos = time.Unix(0, math.MinInt64+1), time.Unix(0, math.MaxInt64)

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
