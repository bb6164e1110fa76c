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
	"sync"
	"time"
)

// DefaultMaxEntries bounds a [Memory] store when its bound is zero: at the
// default max_age plus twice the leeway (120s), about 8 300 proofs per second.
const DefaultMaxEntries = 1_000_000

// Memory is a bounded, in-process replay store. It is safe for concurrent
// use and never blocks beyond its mutex. Behind a load balancer it is not
// enough: use [Redis].
type Memory struct {
	max int

	mu    sync.Mutex
	seen  map[[32]byte]time.Time // key -> expiry
	queue []entry                // insertion order; purged from the front
	head  int
	stats MemoryStats
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
	m.queue = append(m.queue, entry{key, exp})
	m.stats.Fresh++
	return true, nil
}

// purge drops the expired entries at the front of the queue. Entries are
// queued in the order of their use; with one ttl that is their order of
// expiry, and a longer-lived entry ahead only delays the purge of the ones
// behind it (never their expiry, which Use reads from the map).
func (m *Memory) purge(now time.Time) {
	for m.head < len(m.queue) && !now.Before(m.queue[m.head].expiry) {
		e := m.queue[m.head]
		if exp, ok := m.seen[e.key]; ok && exp.Equal(e.expiry) {
			delete(m.seen, e.key)
		}
		m.queue[m.head] = entry{}
		m.head++
	}
	// Compact when the purged front is half the queue.
	if m.head > 1024 && m.head*2 >= len(m.queue) {
		m.queue = append(m.queue[:0:0], m.queue[m.head:]...)
		m.head = 0
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
