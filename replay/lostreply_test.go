package replay_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
)

// replyDropper is a TCP proxy in front of a redis-server that, once armed,
// lets the next command that holds match reach the server and then closes
// that connection instead of passing its reply on: a reply lost after the
// command was applied.
type replyDropper struct {
	ln      net.Listener
	match   []byte // lower case
	armed   atomic.Bool
	dropped atomic.Int32
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
	closed  bool // close has run: a connection accepted since is closed at once
}

func newReplyDropper(t *testing.T, match string) *replyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &replyDropper{ln: ln, match: []byte(strings.ToLower(match))}
	t.Cleanup(d.close)
	return d
}

func (d *replyDropper) port() int { return d.ln.Addr().(*net.TCPAddr).Port }

// serve proxies every connection to target until closed.
func (d *replyDropper) serve(target string) {
	d.wg.Go(func() {
		for {
			c, err := d.ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			if !d.track(c, s) {
				return
			}
			var sent atomic.Bool // a matching command went to the server while armed
			d.wg.Go(func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if d.armed.Load() && bytes.Contains(bytes.ToLower(buf[:n]), d.match) {
							sent.Store(true)
						}
						if _, werr := s.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						s.Close()
						return
					}
				}
			})
			d.wg.Go(func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 && sent.Load() && d.armed.CompareAndSwap(true, false) {
						d.dropped.Add(1)
						c.Close()
						s.Close()
						return
					}
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						c.Close()
						return
					}
				}
			})
		}
	})
}

// track keeps cs for close, or closes them and reports false when close
// has already run (their copy goroutines would outlive it).
func (d *replyDropper) track(cs ...net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	d.conns = append(d.conns, cs...)
	return true
}

func (d *replyDropper) close() {
	d.ln.Close()
	d.mu.Lock()
	d.closed = true
	for _, c := range d.conns {
		c.Close()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

// TestRedisClusterLostReply: a proof's use whose reply is lost after Redis
// applied it, and which go-redis's cluster client then sends again, is
// fresh — its own earlier write, not a replay — and the proof is refused
// afterwards. With a plain SET NX the retry answered "replayed": a
// legitimate proof refused.
func TestRedisClusterLostReply(t *testing.T) {
	prefix := "test:" + t.Name() + ":"
	// The use of key(2): the command naming its key (prefix + hex).
	k2 := key(2)
	d := newReplyDropper(t, prefix+hex.EncodeToString(k2[:]))
	// A one-node cluster announcing the proxy's port: the cluster client
	// learns the node from CLUSTER SLOTS and talks to it through the proxy.
	srv := redistest.Start(t, "--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf"),
		"--cluster-announce-ip", "127.0.0.1", "--cluster-announce-port", strconv.Itoa(d.port()))
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer admin.Close()
	ctx := context.Background()
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := admin.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok within 10s: %q, %v", info, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the node's own state (a new master waits 2 s before it is ok)
	}
	d.serve(srv.Addr())

	st := newRedis(t, redisconn.Options{Cluster: redisconn.Cluster{Addrs: []string{d.ln.Addr().String()}}, Timeout: 5 * time.Second},
		prefix)
	// Warm up: the slot map is known and a pooled connection is open.
	if ok, err := st.Use(ctx, key(1), time.Minute, t0); !ok || err != nil {
		t.Fatalf("Use() of a first key = %t, %v; want fresh", ok, err)
	}

	d.armed.Store(true)
	ok, err := st.Use(ctx, key(2), time.Minute, t0)
	if n := d.dropped.Load(); n != 1 {
		t.Fatalf("%d replies dropped, want 1 (the test did not lose the use's reply)", n)
	}
	if !ok || err != nil {
		t.Errorf("Use() whose reply was lost and which the client sent again = %t, %v; want fresh", ok, err)
	}
	if ok, err := st.Use(ctx, key(2), time.Minute, t0); ok || err != nil {
		t.Errorf("Use() of the same key again = %t, %v; want replayed", ok, err)
	}
}
