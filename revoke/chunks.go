package revoke

import "sync/atomic"

// This file holds the index's pointer-free storage: values and bytes in
// fixed chunks that never move once written, so that a reader holding a
// number may read them while the single writer appends more. The writer
// publishes a grown list of chunks through an atomic pointer before it
// publishes a number in it (a slot's node, a node's strings).

// chunkShift sets the values per chunk of [chunks].
const chunkShift = 10

// chunks is an append-only sequence of T (which must hold no pointer, or
// the collector scans it after all), numbered from 0.
type chunks[T any] struct {
	list []*[1 << chunkShift]T // the writer's
	pub  atomic.Pointer[[]*[1 << chunkShift]T]
	n    uint32
}

// add appends v and returns its number. Writer only.
func (c *chunks[T]) add(v T) uint32 {
	i := c.n
	if int(i>>chunkShift) == len(c.list) {
		c.list = append(c.list, new([1 << chunkShift]T))
		l := c.list
		c.pub.Store(&l)
	}
	c.list[i>>chunkShift][i&(1<<chunkShift-1)] = v
	c.n++
	return i
}

// at returns value i, which add returned before.
func (c *chunks[T]) at(i uint32) *T {
	l := *c.pub.Load()
	return &l[i>>chunkShift][i&(1<<chunkShift-1)]
}

// arenaShift sets the size of an [arena]'s chunks: 64 KiB. A string longer
// than that gets a chunk of its own.
const arenaShift = 16

// strRef names a string in an [arena]: its chunk, its start in the chunk
// and its length. The zero strRef is "". (A chunk number of its own, not
// bits of one offset: an arena of any size is addressed without overflow.)
type strRef struct{ chunk, start, n uint32 }

// arena is append-only bytes, in chunks that never move.
type arena struct {
	list [][]byte // the writer's
	pub  atomic.Pointer[[][]byte]
	used int // bytes used of the last chunk
}

// add copies s into the arena and returns where. Writer only.
func (a *arena) add(s string) strRef {
	if s == "" {
		return strRef{}
	}
	if len(a.list) == 0 || a.used+len(s) > len(a.list[len(a.list)-1]) {
		a.list = append(a.list, make([]byte, max(1<<arenaShift, len(s))))
		a.used = 0
		l := a.list
		a.pub.Store(&l)
	}
	c := len(a.list) - 1
	copy(a.list[c][a.used:], s)
	ref := strRef{chunk: uint32(c), start: uint32(a.used), n: uint32(len(s))}
	a.used += len(s)
	if len(s) >= 1<<arenaShift {
		a.used = len(a.list[c]) // a chunk of its own: full
	}
	return ref
}

// bytes returns the bytes of r, which add returned before. They must not
// be changed.
func (a *arena) bytes(r strRef) []byte {
	if r.n == 0 {
		return nil
	}
	l := *a.pub.Load()
	return l[r.chunk][r.start : r.start+r.n]
}

// equal reports whether r is s. It does not allocate.
func (a *arena) equal(r strRef, s string) bool {
	return int(r.n) == len(s) && string(a.bytes(r)) == s
}

// string returns r as a new string.
func (a *arena) string(r strRef) string { return string(a.bytes(r)) }
