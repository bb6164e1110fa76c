package revoke_test

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/revoke"
)

// deafProxy passes connections to a redis-server; once deafened, the
// connections that have sent SUBSCRIBE so far get nothing more from the
// server (their commands still reach it): a half-open subscription, as
// after the server's host vanished or a middlebox dropped the flow, which
// the client's writes do not notice until TCP gives up (minutes).
type deafProxy struct {
	ln         net.Listener
	subscribes atomic.Int32 // SUBSCRIBE commands seen
	mu         sync.Mutex
	conns      []net.Conn
	subs       []*atomic.Bool // each subscribing connection's deafness
}

// deafen makes every connection that has subscribed so far deaf.
func (p *deafProxy) deafen() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.subs {
		d.Store(true)
	}
}

func newDeafProxy(t *testing.T, target string) *deafProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &deafProxy{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			deaf := new(atomic.Bool)
			var subscriber atomic.Bool
			wg.Go(func() { // client → server
				defer s.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if bytes.Contains(bytes.ToLower(buf[:n]), []byte("subscribe")) {
							if !subscriber.Swap(true) {
								p.mu.Lock()
								p.subs = append(p.subs, deaf)
								p.mu.Unlock()
							}
							p.subscribes.Add(1)
						}
						if _, werr := s.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
			wg.Go(func() { // server → client
				defer c.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						if !deaf.Load() {
							if _, werr := c.Write(buf[:n]); werr != nil {
								return
							}
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	return p
}

// TestRedisDeadSubscriptionIsReplaced: the follower pings its subscription
// every poll but never looked for the answer, so a subscription that no
// longer hears the server was kept for as long as TCP let it: every change
// was then learned only by the poll's second look (a full read of the
// store per change, past SPEC's 1 s), instead of by a new subscription.
func TestRedisDeadSubscriptionIsReplaced(t *testing.T) {
	srv := startRedis(t)
	p := newDeafProxy(t, "127.0.0.1:"+strconv.Itoa(srv.port))
	c := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String(), MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	st, err := revoke.NewRedis(revoke.RedisOptions{Client: c, Retention: time.Hour, MaxStaleness: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(); c.Close() })
	eventually(t, 10*time.Second, "first sync", func() bool { return !st.Index().Stale(time.Now()) })
	// A subscription that answers its PINGs is kept (a few polls).
	time.Sleep(4 * time.Second)
	if got := p.subscribes.Load(); got != 1 {
		t.Fatalf("SUBSCRIBE sent %d times before the fault, want 1", got)
	}
	p.deafen()
	eventually(t, 15*time.Second, "a new subscription", func() bool { return p.subscribes.Load() > 1 })
	// The new one hears the changes again: one made elsewhere is applied.
	w := newStore(t, srv, 30*time.Second)
	eventually(t, 10*time.Second, "the writer's first sync", func() bool { return !w.Index().Stale(time.Now()) })
	if _, err := w.Add(t.Context(), revoke.Entry{Issuer: "https://a/", Kind: revoke.KindJTI, Value: "j", Source: revoke.SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the change heard", func() bool {
		return st.Index().Check("https://a/", &revoke.Token{JTI: "j"}, time.Now()) == revoke.ErrRevoked
	})
}
