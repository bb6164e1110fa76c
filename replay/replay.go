// Package replay holds the stores that remember used DPoP proofs
// (dpop.ReplayStore): [Memory], bounded and per process, and [Redis],
// shared by every replica through one atomic set-if-absent per proof, so
// that a proof replayed at another replica is refused there too.
//
// A store decides "fresh or replayed" atomically and fails closed: a store
// that cannot answer (Redis unreachable, memory full) returns an error, which
// package dpop turns into "could not decide" (keys_unavailable, 503), never
// into an accept.
package replay

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// DefaultMaxEntries bounds a [Memory] store when its bound is zero: at the
// default max_age plus twice the leeway plus dpop's in-flight minute
// (180s), about 5 500 proofs per second.
const DefaultMaxEntries = 1_000_000

// Memory is a bounded, in-process replay store. It is safe for concurrent
// use and never blocks beyond its mutex. Behind a load balancer it is not
// enough: use [Redis].
type Memory struct {
	max int

	mu   sync.Mutex
	seen map[[32]byte]time.Time // key -> expiry
	// queues holds one queue per lifetime (ttl) in use, each in the
	// order of its uses and so of its expiries: one queue for every
	// lifetime let a longer-lived entry at its front (a DPoP proof of an
	// issuer with a longer leeway) hold back the purge of every shorter
	// one behind it, which counted against the bound until it was full
	// of expired entries.
	queues []*fifo
	stats  MemoryStats
}

// fifo is the queue of the entries of one lifetime; purged from the front.
type fifo struct {
	ttl   time.Duration
	queue []entry
	head  int
}

type entry struct {
	key    [32]byte
	expiry time.Time
}

// MemoryStats are a Memory store's counters.
type MemoryStats struct {
	// Fresh and Replayed count the answers; Full the refusals of a full
	// store.
	Fresh, Replayed, Full uint64
	// Entries is the number of proofs remembered now.
	Entries int
}

// MaxMaxEntries bounds the bound of a [Memory] store.
const MaxMaxEntries = 100_000_000

// CheckMaxEntries reports whether [NewMemory] accepts maxEntries: an error
// wrapping [ErrInvalidOptions] that names the field first if not.
func CheckMaxEntries(maxEntries int) error {
	if maxEntries < 0 || maxEntries > MaxMaxEntries {
		return invalidOption("MaxEntries", "%d is out of range [1, %d]", maxEntries, MaxMaxEntries)
	}
	return nil
}

// NewMemory returns a Memory store of at most maxEntries proofs. Zero means
// [DefaultMaxEntries]; [CheckMaxEntries] says what is refused.
func NewMemory(maxEntries int) (*Memory, error) {
	if err := CheckMaxEntries(maxEntries); err != nil {
		return nil, err
	}
	if maxEntries == 0 {
		maxEntries = DefaultMaxEntries
	}
	return &Memory{max: maxEntries, seen: make(map[[32]byte]time.Time)}, nil
}

// SetMax changes the store's bound to maxEntries (zero: [DefaultMaxEntries];
// [CheckMaxEntries] says what is refused) and keeps every proof it holds: a
// configuration reload must not forget them. A bound below the entries
// held refuses new proofs ([ErrFull]) until enough expire. It is safe for
// concurrent use.
func (m *Memory) SetMax(maxEntries int) error {
	if err := CheckMaxEntries(maxEntries); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.max = cmp.Or(maxEntries, DefaultMaxEntries)
	return nil
}

// Use implements dpop.ReplayStore: key is fresh unless it was used and has
// not expired at now. Expired entries are dropped as Use goes.
func (m *Memory) Use(_ context.Context, key [32]byte, ttl time.Duration, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purge(now)
	if exp, ok := m.seen[key]; ok && now.Before(exp) {
		m.stats.Replayed++
		return false, nil
	}
	if len(m.seen) >= m.max {
		m.stats.Full++
		return false, fmt.Errorf("%w (%d proofs)", ErrFull, m.max)
	}
	exp := now.Add(ttl)
	m.seen[key] = exp
	q := m.queueOf(ttl)
	q.queue = append(q.queue, entry{key, exp})
	m.stats.Fresh++
	return true, nil
}

// maxQueues bounds the queues of a [Memory]: lifetimes come from the
// configuration (DPoP: max_age and each issuer's leeway), but a signal's
// jti is kept until its token's exp when that is later than a day, one
// lifetime per token. Past the bound an entry joins the longest-lived
// queue, where it waits for the entries ahead of it to be purged (its
// expiry, which Use reads from the map, is unchanged), so that Use stays
// O(maxQueues).
const maxQueues = 16

// queueOf returns the queue of the entries kept ttl, made if need be.
func (m *Memory) queueOf(ttl time.Duration) *fifo {
	var longest *fifo
	for _, q := range m.queues {
		if q.ttl == ttl {
			return q
		}
		if longest == nil || q.ttl > longest.ttl {
			longest = q
		}
	}
	if len(m.queues) >= maxQueues {
		return longest
	}
	q := &fifo{ttl: ttl}
	m.queues = append(m.queues, q)
	return q
}

// purge drops the expired entries at the front of each queue, and the
// queues left empty. Entries of one queue share their ttl and are queued
// in the order of their use, which is their order of expiry (Use's now
// going back a little only delays a purge by as much, never an expiry,
// which Use reads from the map).
func (m *Memory) purge(now time.Time) {
	for i := 0; i < len(m.queues); {
		q := m.queues[i]
		for q.head < len(q.queue) && !now.Before(q.queue[q.head].expiry) {
			e := q.queue[q.head]
			if exp, ok := m.seen[e.key]; ok && exp.Equal(e.expiry) {
				delete(m.seen, e.key)
			}
			q.queue[q.head] = entry{}
			q.head++
		}
		if q.head == len(q.queue) {
			m.queues = slices.Delete(m.queues, i, i+1)
			continue
		}
		// Compact when the purged front is half the queue.
		if q.head > 1024 && q.head*2 >= len(q.queue) {
			q.queue = append(q.queue[:0:0], q.queue[q.head:]...)
			q.head = 0
		}
		i++
	}
}

// Stats returns the store's counters. It is safe for concurrent use.
func (m *Memory) Stats() MemoryStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Entries = len(m.seen)
	return s
}
