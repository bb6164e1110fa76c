// Package deadline keeps the read and write deadlines of a listener's
// connections on a coarse clock, for an HTTP server whose timeouts are
// seconds long: net/http sets four or five deadlines per request
// (ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout, and clearing
// them), and each one on a net.Conn is a runtime timer added, moved or
// removed, about 0.4 µs of a forward-auth request that costs 20. A
// [Listener]'s connections record a deadline in memory instead; one
// goroutine sweeps them every tick and expires the deadlines that have
// passed on the real connection (a deadline in the past: a blocked Read or
// Write then fails with os.ErrDeadlineExceeded, as with a real timer). A
// deadline is thus enforced at most one tick late. A deadline within one
// tick of now (net/http sets one in the past to abort a background read)
// goes to the real connection at once. Recording a deadline while the real
// connection holds none, as every deadline of net/http's timeouts is, is one
// compare-and-swap: no lock, no timer. Deadlines count on the monotonic
// clock, as a real connection's do: a step of the wall clock neither
// expires them early nor postpones them.
package deadline

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTick is the sweep interval when NewListener is given zero.
const DefaultTick = 250 * time.Millisecond

// past is the deadline that expires a real connection's Read or Write.
var past = time.Unix(1, 0)

// Listener wraps a net.Listener so that its connections keep coarse
// deadlines. It is safe for concurrent use. Close closes the wrapped
// listener; the sweeping goroutine goes on enforcing the deadlines of the
// connections already accepted — a drain's requests, tls.Conn.Close's
// close_notify write — until the last of them is closed, then ends.
type Listener struct {
	net.Listener
	tick  time.Duration
	epoch time.Time    // when the Listener was made, with its monotonic reading
	now   atomic.Int64 // nanoseconds since epoch, refreshed every tick
	mu    sync.Mutex
	conns map[*conn]struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// NewListener returns ln with coarse deadlines, swept every tick (zero
// means DefaultTick). The Listener owns a goroutine until it is closed and
// its last connection is.
func NewListener(ln net.Listener, tick time.Duration) *Listener {
	if tick <= 0 {
		tick = DefaultTick
	}
	l := &Listener{Listener: ln, tick: tick, epoch: time.Now(), conns: map[*conn]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	go l.sweep()
	return l
}

// Accept returns the next connection, with coarse deadlines.
func (l *Listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: nc, l: l}
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	return c, nil
}

// Close closes the wrapped listener. The sweeper ends once every
// connection accepted is closed too.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.stop) })
	return err
}

func (l *Listener) sweep() {
	defer close(l.done)
	t := time.NewTicker(l.tick)
	defer t.Stop()
	stop := l.stop
	for {
		select {
		case <-stop:
			stop = nil // closed: sweep on while connections remain
		case now := <-t.C:
			l.expire(now)
		}
		if stop == nil && l.empty() {
			return
		}
	}
}

// empty reports whether every connection accepted is closed.
func (l *Listener) empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns) == 0
}

// since is t in nanoseconds since the Listener's epoch: on the monotonic
// clock when t has a monotonic reading (time.Now().Add(d), every deadline
// net/http and crypto/tls set), on the wall clock otherwise (time.Unix(1, 0),
// net/http's deadline in the past). Beyond about 292 years either way it
// saturates.
func (l *Listener) since(t time.Time) int64 { return int64(t.Sub(l.epoch)) }

// expire refreshes the coarse clock and expires every deadline before now.
func (l *Listener) expire(now time.Time) {
	n := l.since(now)
	l.now.Store(n)
	l.mu.Lock()
	conns := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.expire(n)
	}
}

// conn is a connection whose deadlines are kept in memory until they pass.
type conn struct {
	net.Conn
	l *Listener

	// rd and wd are the read and write deadlines: a pending deadline in
	// nanoseconds since the Listener's epoch (0: none), or onReal when the real connection holds
	// one (set directly, or expired by the sweeper) that a later deadline
	// must clear. Recording a later deadline is one compare-and-swap; mu orders
	// every change of the real connection's deadlines and the closed flag.
	rd, wd atomic.Int64
	mu     sync.Mutex
	closed bool
}

// onReal marks a direction whose deadline the real connection holds. No
// pending deadline takes this value, nor 0: a pending one is at least a tick
// past the coarse clock, which counts up from 0 at the Listener's epoch.
const onReal = -1

// Close closes the connection and forgets it.
func (c *conn) Close() error {
	c.mu.Lock()
	first := !c.closed
	c.closed = true
	c.mu.Unlock()
	if first {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	}
	return c.Conn.Close()
}

// CloseWrite shuts down the writing side of a connection that can (a TCP
// connection): net/http does so before closing a connection whose request
// body it refused, so that the client reads the answer instead of a reset.
// It does nothing on another connection.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// SetDeadline sets both deadlines.
func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline records t as the read deadline.
func (c *conn) SetReadDeadline(t time.Time) error {
	return c.set(t, &c.rd, c.Conn.SetReadDeadline)
}

// SetWriteDeadline records t as the write deadline.
func (c *conn) SetWriteDeadline(t time.Time) error {
	return c.set(t, &c.wd, c.Conn.SetWriteDeadline)
}

// set records t as the deadline in st, or sets it on the real connection
// (setReal) when it is within a tick of now; a deadline the real
// connection holds is cleared. Recording a deadline while the real
// connection holds none (every deadline net/http sets for its timeouts) is
// one compare-and-swap, without the lock; leaving "the real connection
// holds one" takes the lock, and clears the real connection first.
func (c *conn) set(t time.Time, st *atomic.Int64, setReal func(time.Time) error) error {
	var n int64 // 0: no deadline
	if !t.IsZero() {
		n = c.l.since(t)
		if n < c.l.now.Load()+int64(c.l.tick) { // n ≤ 0 too: not 0, not onReal below
			c.mu.Lock()
			defer c.mu.Unlock()
			st.Store(onReal)
			return setReal(t)
		}
	}
	// Without the lock, only a state that is not onReal moves: the real
	// connection holds no deadline for as long as the state is not onReal.
	for {
		old := st.Load()
		if old == onReal {
			break
		}
		if st.CompareAndSwap(old, n) {
			return nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.Load() != onReal {
		// Another setter cleared the real connection's deadline.
		st.Store(n)
		return nil
	}
	// Clear the real connection's deadline before the state leaves onReal,
	// so that no setter returns while a stale deadline stands.
	err := setReal(time.Time{})
	st.Store(n)
	return err
}

// expire expires on the real connection the deadlines before now.
func (c *conn) expire(now int64) {
	c.expireOne(now, &c.rd, c.Conn.SetReadDeadline)
	c.expireOne(now, &c.wd, c.Conn.SetWriteDeadline)
}

// expireOne expires the deadline in st on the real connection (setReal)
// if it is before now.
func (c *conn) expireOne(now int64, st *atomic.Int64, setReal func(time.Time) error) {
	d := st.Load()
	if d <= 0 || d > now {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.CompareAndSwap(d, onReal) { // not moved since the load
		_ = setReal(past)
	}
}
