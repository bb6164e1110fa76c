package revoke_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/revoke"
)

// fakeRedis speaks just enough RESP2 for a revocation store's follower:
// SUBSCRIBE, PING, GET of the version, and EVAL of its scripts (EVALSHA is
// NOSCRIPT), each script answered by reply. publish sends a message to
// every subscribed connection.
type fakeRedis struct {
	ln    net.Listener
	reply func(script string) string // the raw reply to an EVAL of script

	mu      sync.Mutex
	version string
	subs    []net.Conn
}

func newFakeRedis(t *testing.T, reply func(script string) string) *fakeRedis {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRedis{ln: ln, reply: reply, version: "1"}
	var wg sync.WaitGroup
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		f.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			conns = append(conns, c)
			f.mu.Unlock()
			wg.Go(func() { f.serve(c) })
		}
	})
	return f
}

func (f *fakeRedis) setVersion(v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version = v
}

func (f *fakeRedis) publish(ch, payload string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.subs {
		fmt.Fprintf(c, "*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(ch), ch, len(payload), payload)
	}
}

func (f *fakeRedis) serve(c net.Conn) {
	defer c.Close()
	rd := bufio.NewReader(c)
	subscribed := false
	for {
		args, err := readCommand(rd)
		if err != nil {
			return
		}
		var out string
		switch name := strings.ToUpper(args[0]); {
		case name == "SUBSCRIBE" && len(args) == 2:
			subscribed = true
			f.mu.Lock()
			f.subs = append(f.subs, c)
			f.mu.Unlock()
			out = fmt.Sprintf("*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(args[1]), args[1])
		case name == "PING" && subscribed:
			out = "*2\r\n$4\r\npong\r\n$0\r\n\r\n"
		case name == "PING":
			out = "+PONG\r\n"
		case name == "GET":
			f.mu.Lock()
			out = fmt.Sprintf("$%d\r\n%s\r\n", len(f.version), f.version)
			f.mu.Unlock()
		case name == "EVALSHA":
			out = "-NOSCRIPT No matching script.\r\n"
		case name == "EVAL" && len(args) > 1:
			out = f.reply(args[1])
		default:
			out = "-ERR unknown command\r\n"
		}
		f.mu.Lock()
		_, err = io.WriteString(c, out)
		f.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(rd *bufio.Reader) ([]string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, errors.New("not an array")
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 1 {
		return nil, errors.New("bad array")
	}
	args := make([]string, n)
	for i := range args {
		line, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil || size < 0 {
			return nil, errors.New("bad bulk")
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

// TestRedisReplyOfUnexpectedTypeLiftsNothing: a follower's read whose reply
// is not of the shape its script returns (a Redis-compatible server, a
// proxy, a script of another version under the same name) is a failed
// read, never "no entries". The full read took a reply whose entries were
// not an array for an empty store, and a change's check took an entry that
// was not a string for "lifted": either way every acknowledged revocation
// left the copy, which the next poll then proved whole, and the revoked
// token passed at every replica.
func TestRedisReplyOfUnexpectedTypeLiftsNothing(t *testing.T) {
	now := time.Now().UTC()
	e := revoke.Entry{ID: "e1", Issuer: "https://a/", Kind: revoke.KindJTI, Value: "j1",
		CreatedAt: now, ExpiresAt: now.Add(2 * time.Hour), Source: revoke.SourceAdmin}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	good := func(v string) string { return "*2\r\n" + bulk(v) + "*2\r\n" + bulk(e.ID) + bulk(string(b)) }
	for _, tt := range []struct {
		name string
		// snapshot and change answer the full read and a change's check,
		// the n-th time (from 0) they are asked.
		snapshot, change func(n int) string
		// publish, when set, is the change message published once the
		// copy has synced.
		publish string
	}{
		{
			name: "full-read-entries-not-an-array",
			snapshot: func(n int) string {
				if n == 0 {
					return good("1")
				}
				return "*2\r\n" + bulk("2") + ":0\r\n"
			},
		},
		{
			name: "full-read-entries-a-status",
			snapshot: func(n int) string {
				if n == 0 {
					return good("1")
				}
				return "*2\r\n" + bulk("2") + "+OK\r\n"
			},
		},
		{
			name:     "change-entry-not-a-string",
			snapshot: func(int) string { return good("1") },
			change:   func(int) string { return "*2\r\n" + bulk("2") + ":0\r\n" },
			publish:  "2 d " + e.ID,
		},
		{
			name:     "change-entry-an-array",
			snapshot: func(int) string { return good("1") },
			change:   func(int) string { return "*2\r\n" + bulk("2") + "*1\r\n" + bulk(string(b)) },
			publish:  "2 d " + e.ID,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var snapshots, changes int
			f := newFakeRedis(t, func(script string) string {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case strings.Contains(script, "HGETALL"):
					snapshots++
					return tt.snapshot(snapshots - 1)
				case strings.Contains(script, "'HGET'") && tt.change != nil:
					changes++
					return tt.change(changes - 1)
				}
				return "-ERR unexpected script\r\n"
			})
			c := redis.NewClient(&redis.Options{Addr: f.ln.Addr().String(), Protocol: 2, DisableIdentity: true, MaxRetries: -1,
				DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
			st, err := revoke.NewRedis(revoke.RedisOptions{Client: c, Retention: time.Hour, MaxStaleness: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close(); c.Close() })
			tok := &revoke.Token{JTI: "j1", IssuedAt: now.Add(-time.Minute)}
			eventually(t, 10*time.Second, "first sync", func() bool {
				return errors.Is(st.Index().Check(e.Issuer, tok, time.Now()), revoke.ErrRevoked)
			})
			f.setVersion("2")
			if tt.publish != "" {
				f.publish(revoke.DefaultKeyPrefix+":changes", tt.publish)
			}
			// The polls find version 2; the unexpected reply comes within
			// two of them (or at once, for the published change).
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				if err := st.Index().Check(e.Issuer, tok, time.Now()); err == nil {
					t.Fatalf("after a reply of an unexpected type, Check(revoked token) = nil, want revoked or stale")
				}
			}
		})
	}
}
