package deadline

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"
)

// pipeListener accepts the server ends of net.Pipe pairs sent on conns.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn, 1), closed: make(chan struct{})}
}

func (p *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}
func (p *pipeListener) Close() error   { p.once.Do(func() { close(p.closed) }); return nil }
func (p *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

// accept returns a connection of l and the client end of its pipe.
func accept(t *testing.T, pl *pipeListener, l *Listener) (net.Conn, net.Conn) {
	t.Helper()
	server, client := net.Pipe()
	pl.conns <- server
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); client.Close() })
	return c, client
}

// TestDeadlines: a pending deadline expires a blocked Read at most one
// tick late, with os.ErrDeadlineExceeded, and one within a tick of now on
// time (on the real connection); a deadline cleared or moved
// later does not expire; one in the past aborts a Read at once and a later
// zero deadline clears it; a write deadline expires a blocked Write.
func TestDeadlines(t *testing.T) {
	const tick = 100 * time.Millisecond
	tests := []struct {
		name string
		run  func(t *testing.T, c, client net.Conn)
	}{
		{"read-expires-within-a-tick", func(t *testing.T, c, _ net.Conn) {
			start := time.Now()
			_ = c.SetReadDeadline(start.Add(time.Second))
			_, err := c.Read(make([]byte, 1))
			if el := time.Since(start); !errors.Is(err, os.ErrDeadlineExceeded) || el < time.Second || el > time.Second+tick {
				t.Errorf("Read() = %v after %v, want a deadline error within [1s, 1s+tick]", err, el)
			}
		}},
		{"cleared-does-not-expire", func(t *testing.T, c, client net.Conn) {
			_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			_ = c.SetReadDeadline(time.Time{})
			go func() { time.Sleep(time.Second); client.Write([]byte("x")) }()
			if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
				t.Errorf("Read() = %d, %v; want the byte written after the cleared deadline", n, err)
			}
		}},
		{"moved-later", func(t *testing.T, c, client net.Conn) {
			_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			go func() { time.Sleep(time.Second); client.Write([]byte("x")) }()
			if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
				t.Errorf("Read() = %d, %v; want the byte written before the later deadline", n, err)
			}
		}},
		{"past-aborts-at-once-then-cleared", func(t *testing.T, c, client net.Conn) {
			start := time.Now()
			_ = c.SetReadDeadline(past)
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != 0 {
				t.Errorf("Read() = %v after %v, want a deadline error at once", err, time.Since(start))
			}
			_ = c.SetReadDeadline(time.Time{})
			go func() { client.Write([]byte("x")) }()
			if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
				t.Errorf("Read() after clearing = %d, %v; want the byte", n, err)
			}
		}},
		{"within-a-tick-is-exact", func(t *testing.T, c, _ net.Conn) {
			// Ten sweeps in, half a tick after the last: a deadline a
			// quarter tick away goes to the real connection, not to the
			// next sweep (which would be a quarter tick late).
			time.Sleep(10*tick + tick/2)
			start := time.Now()
			_ = c.SetReadDeadline(start.Add(tick / 4))
			_, err := c.Read(make([]byte, 1))
			if el := time.Since(start); !errors.Is(err, os.ErrDeadlineExceeded) || el != tick/4 {
				t.Errorf("Read() = %v after %v, want a deadline error after exactly %v", err, el, tick/4)
			}
		}},
		{"write-expires", func(t *testing.T, c, _ net.Conn) {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			if _, err := c.Write([]byte("nobody reads")); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("Write() = %v, want a deadline error", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pl := newPipeListener()
				l := NewListener(pl, tick)
				c, client := accept(t, pl, l)
				tt.run(t, c, client)
				// The sweeper ends once the listener and its last
				// connection are closed (synctest fails a goroutine left).
				l.Close()
				c.Close()
				time.Sleep(tick)
			})
		})
	}
}

// TestDeadlinesAfterClose: a listener closed (a drain) goes on enforcing
// the deadlines of the connections it accepted — a request still being
// read, tls.Conn.Close's close_notify write — and its sweeper ends once
// the last of them is closed.
func TestDeadlinesAfterClose(t *testing.T) {
	const tick = 100 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		pl := newPipeListener()
		l := NewListener(pl, tick)
		c, _ := accept(t, pl, l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = c.SetWriteDeadline(start.Add(time.Second))
		if _, err := c.Write([]byte("nobody reads")); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) > time.Second+tick {
			t.Errorf("Write() after the listener closed = %v after %v, want a deadline error within 1s+tick", err, time.Since(start))
		}
		c.Close()
		time.Sleep(tick) // the sweeper's next tick
		synctest.Wait()
		select {
		case <-l.done:
		default:
			t.Error("the sweeper still runs after the listener and its last connection closed")
		}
	})
}

// TestHTTPServer: an http.Server over a Listener answers keep-alive
// requests, and closes a connection that sends no request within
// ReadHeaderTimeout.
func TestHTTPServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl := newPipeListener()
		l := NewListener(pl, 100*time.Millisecond)
		srv := &http.Server{
			Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }),
			ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second, IdleTimeout: 10 * time.Second,
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()

		server, client := net.Pipe()
		pl.conns <- server
		buf := make([]byte, 512)
		for i := range 3 {
			if _, err := io.WriteString(client, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			n, err := client.Read(buf)
			if err != nil || n < 12 || string(buf[:12]) != "HTTP/1.1 204" {
				t.Fatalf("answer %d = %q, %v; want 204", i, buf[:n], err)
			}
		}
		// Silent past IdleTimeout: the server closes the connection.
		start := time.Now()
		if _, err := client.Read(buf); err == nil || time.Since(start) > 10*time.Second+200*time.Millisecond {
			t.Errorf("idle Read() = %v after %v, want the connection closed after IdleTimeout", err, time.Since(start))
		}
		client.Close()
		_ = srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve() = %v", err)
		}
	})
}

// BenchmarkSetDeadlines is the deadlines net/http sets per request with
// its timeouts on, on a loopback TCP connection, directly and through a
// Listener.
func BenchmarkSetDeadlines(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	l := NewListener(ln, 0)
	defer l.Close()
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			defer c.Close()
			_, _ = io.Copy(io.Discard, c)
		}
	}()
	wrapped, err := l.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer wrapped.Close()
	real := wrapped.(*conn).Conn
	for _, bc := range []struct {
		name string
		c    net.Conn
	}{{"net-conn", real}, {"coarse", wrapped}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				now := time.Now()
				_ = bc.c.SetWriteDeadline(now.Add(10 * time.Second))
				_ = bc.c.SetReadDeadline(now.Add(10 * time.Second))
				_ = bc.c.SetWriteDeadline(time.Time{})
				_ = bc.c.SetReadDeadline(now.Add(60 * time.Second))
				_ = bc.c.SetReadDeadline(now.Add(5 * time.Second))
			}
		})
	}
}

// TestCloseWrite: a TCP connection's CloseWrite reaches the real
// connection (the peer reads EOF while the connection stays open for
// reading).
func TestCloseWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(ln, 0)
	defer l.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("the connection has no CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatalf("CloseWrite() = %v", err)
	}
	if n, err := client.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("peer Read() = %d, %v; want EOF", n, err)
	}
}

// recordingConn is a net.Conn that records the deadlines set on it.
type recordingConn struct {
	net.Conn
	mu     sync.Mutex
	rd, wd time.Time
}

func (r *recordingConn) SetReadDeadline(t time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rd = t
	return nil
}

func (r *recordingConn) SetWriteDeadline(t time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wd = t
	return nil
}

// TestConcurrentDeadlines: deadlines set from several goroutines (far
// ones, recorded without the lock; near and past ones, set on the real
// connection; zero ones) while the sweeper expires them leave the
// connection consistent: the real connection holds a deadline exactly when
// the recorded state says so, and a recorded pending deadline is the last
// one set or expired.
func TestConcurrentDeadlines(t *testing.T) {
	const tick = int64(time.Second)
	base := time.Unix(1_000_000, 0)
	for round := range 200 {
		l := &Listener{tick: time.Duration(tick), epoch: base}
		real := &recordingConn{}
		c := &conn{Conn: real, l: l}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 50 {
					var d time.Time
					switch (round + g + i) % 4 {
					case 0: // far: recorded
						d = base.Add(time.Duration(2+i%5) * time.Second)
					case 1: // past: real at once
						d = past
					case 2: // zero: cleared
					case 3: // near: real at once
						d = base.Add(time.Duration(tick / 2))
					}
					_ = c.SetReadDeadline(d)
					if i%7 == g {
						c.expire(l.since(base.Add(4 * time.Second)))
					}
				}
			})
		}
		wg.Wait()
		st := c.rd.Load()
		real.mu.Lock()
		onConn := !real.rd.IsZero()
		real.mu.Unlock()
		if (st == onReal) != onConn {
			t.Fatalf("round %d: state %d, real deadline set %v: want the real connection to hold a deadline exactly when the state is onReal", round, st, onConn)
		}
		if st > 0 && st <= l.since(base.Add(4*time.Second)) {
			c.expire(l.since(base.Add(4 * time.Second)))
			if c.rd.Load() != onReal {
				t.Fatalf("round %d: a pending deadline before now did not expire", round)
			}
		}
	}
}

// TestSetterSeesItsDeadline: a setter that records a far deadline returns
// only once the real connection holds no stale deadline, even while another
// goroutine is still clearing the one the real connection held (with
// net.Conn's semantics, a Read after SetReadDeadline(far) returns cannot
// time out at once).
func TestSetterSeesItsDeadline(t *testing.T) {
	l := &Listener{tick: time.Second, epoch: time.Unix(1_000_000, 0)}
	real := &recordingConn{}
	c := &conn{Conn: real, l: l}
	_ = c.SetReadDeadline(past) // abortPendingRead: the real connection holds it
	c.mu.Lock()                 // stall the clearing setter at its lock
	cleared := make(chan struct{})
	go func() {
		defer close(cleared)
		_ = c.SetReadDeadline(time.Time{})
	}()
	time.Sleep(20 * time.Millisecond) // the clearing setter reaches the lock
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		_ = c.SetReadDeadline(time.Unix(1_000_010, 0)) // far: recorded
	}()
	select {
	case <-returned:
		real.mu.Lock()
		stale := !real.rd.IsZero()
		real.mu.Unlock()
		if stale {
			t.Errorf("SetReadDeadline(far) returned with the real connection still holding %v (state %d): a Read now times out spuriously", past, c.rd.Load())
		}
	case <-time.After(100 * time.Millisecond):
		// waits for the lock: the stale deadline is cleared before it returns
	}
	c.mu.Unlock()
	<-cleared
	<-returned
}

// TestWallClockStep: deadlines count on the monotonic clock, as a real
// connection's do. A wall clock stepped back after a deadline was recorded
// does not postpone it, a step forward does not expire it early, and a
// deadline recorded after a step counts from the same monotonic clock.
func TestWallClockStep(t *testing.T) {
	const hour = time.Hour
	tests := []struct {
		name     string
		deadline time.Duration // after base, on both clocks
		set      time.Duration // wall step when the deadline is set
		sweep    time.Duration // when the sweeper runs, after base
		step     time.Duration // wall step when the sweeper runs
		expired  bool
	}{
		{"no-step-before", 10 * time.Second, 0, 9 * time.Second, 0, false},
		{"no-step-after", 10 * time.Second, 0, 11 * time.Second, 0, true},
		{"stepped-back-after-deadline", 10 * time.Second, 0, 11 * time.Second, -hour, true},
		{"stepped-forward-before-deadline", 10 * time.Second, 0, 9 * time.Second, hour, false},
		{"set-after-back-step-passed", 10 * time.Second, -hour, 11 * time.Second, -hour, true},
		{"set-after-back-step-pending", 10 * time.Second, -hour, 9 * time.Second, -hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPipeListener()
			l := NewListener(pl, time.Second) // the test sweeps by hand, long before the sweeper could expire a deadline 9 s away
			defer l.Close()
			c, _ := accept(t, pl, l)
			base := time.Now()
			if err := c.SetReadDeadline(stepWall(t, base, tt.set).Add(tt.deadline)); err != nil {
				t.Fatal(err)
			}
			l.expire(stepWall(t, base.Add(tt.sweep), tt.step))
			if got := c.(*conn).rd.Load() == onReal; got != tt.expired {
				t.Errorf("deadline expired = %v, want %v (state %d)", got, tt.expired, c.(*conn).rd.Load())
			}
		})
	}
}

// stepWall returns tm, a time with a monotonic reading, as time.Now would
// read it after the wall clock stepped by d (whole seconds): the wall
// reading moved, the monotonic one kept. It writes time.Time's wall field
// (the monotonic flag, 33 bits of seconds since 1885, 30 of nanoseconds;
// stable since Go 1.9) and checks its own result.
func stepWall(t *testing.T, tm time.Time, d time.Duration) time.Time {
	t.Helper()
	if d == 0 {
		return tm
	}
	const hasMonotonic, nsecShift = 1 << 63, 30
	out := tm
	w := (*uint64)(unsafe.Pointer(&out)) // time.Time's first field
	if *w&hasMonotonic == 0 {
		t.Fatal("stepWall: the time has no monotonic reading")
	}
	sec := (*w << 1) >> (nsecShift + 1)
	sec = uint64(int64(sec) + int64(d/time.Second))
	*w = hasMonotonic | sec<<nsecShift | *w&(1<<nsecShift-1)
	if out.Sub(tm) != 0 || out.Round(0).Sub(tm.Round(0)) != d {
		t.Fatalf("stepWall: time.Time's layout changed (monotonic difference %v, wall %v, want 0 and %v)", out.Sub(tm), out.Round(0).Sub(tm.Round(0)), d)
	}
	return out
}
