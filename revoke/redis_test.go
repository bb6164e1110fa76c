package revoke_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/revoke"
)

// redisServer is a real redis-server on 127.0.0.1 with an append-only
// file in a directory of the test (a restart keeps what it had), stopped
// by the test.
type redisServer struct {
	t    testing.TB
	port int
	dir  string
	cmd  *exec.Cmd
}

func startRedis(t testing.TB) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed (CI installs it: .ci/run)")
		}
		t.Skip("redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &redisServer{t: t, port: port, dir: t.TempDir()}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--dir", r.dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(r.port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server did not listen within 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a port
	}
}

func (r *redisServer) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

func newStore(t *testing.T, srv *redisServer, maxStale time.Duration) *revoke.Redis {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(srv.port), MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	st, err := revoke.NewRedis(revoke.RedisOptions{Client: c, Retention: time.Hour, MaxStaleness: maxStale})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(); c.Close() })
	return st
}

// newURLStore is a store over the service's client (redisconn) to url, its
// writes through Client.Write, and that client; both are closed when t ends.
func newURLStore(t *testing.T, url string, maxStale time.Duration) (*revoke.Redis, *redisconn.Client) {
	t.Helper()
	c, err := redisconn.New(redisconn.Options{URL: url, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st, err := revoke.NewRedis(revoke.RedisOptions{Client: c, Writer: c, Retention: time.Hour, MaxStaleness: maxStale})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(); c.Close() })
	return st, c
}

// newWriterStore is a store over the service's client (redisconn), its
// writes through Client.Write.
func newWriterStore(t *testing.T, srv *redisServer, maxStale time.Duration) *revoke.Redis {
	t.Helper()
	st, _ := newURLStore(t, "redis://127.0.0.1:"+strconv.Itoa(srv.port), maxStale)
	return st
}

// eventually polls cond every 10ms until it holds, failing after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRedisReplicas(t *testing.T) {
	srv := startRedis(t)
	a, b := newStore(t, srv, 3*time.Second), newWriterStore(t, srv, 3*time.Second)
	ctx := context.Background()
	synced := func(st *revoke.Redis) func() bool {
		return func() bool { return !st.Index().Stale(time.Now()) }
	}
	eventually(t, 10*time.Second, "first sync", synced(a))
	eventually(t, 10*time.Second, "first sync", synced(b))
	iss := "https://a/"
	check := func(st *revoke.Redis, jti string) error {
		return st.Index().Check(iss, &revoke.Token{JTI: jti}, time.Now())
	}

	e, err := a.Add(ctx, revoke.Entry{Issuer: iss, Kind: revoke.KindJTI, Value: "j1", Source: revoke.SourceAdmin})
	if err != nil {
		t.Fatalf("Add() = %v", err)
	}
	if err := check(a, "j1"); !errors.Is(err, revoke.ErrRevoked) {
		t.Errorf("at the acknowledging replica, Check() = %v, want revoked", err)
	}
	eventually(t, time.Second, "propagation", func() bool { return check(b, "j1") == revoke.ErrRevoked })

	if err := b.Delete(ctx, e.ID); err != nil {
		t.Fatalf("Delete() = %v", err)
	}
	if err := b.Delete(ctx, e.ID); !errors.Is(err, revoke.ErrNotFound) {
		t.Errorf("Delete() again = %v, want ErrNotFound", err)
	}
	eventually(t, time.Second, "lift propagation", func() bool { return check(a, "j1") == nil })

	kept, err := a.Add(ctx, revoke.Entry{Issuer: iss, Kind: revoke.KindJTI, Value: "j2", Source: revoke.SourceAdmin})
	if err != nil {
		t.Fatalf("Add() = %v", err)
	}
	eventually(t, time.Second, "propagation", func() bool { return check(b, "j2") == revoke.ErrRevoked })

	srv.stop()
	if _, err := a.Add(ctx, revoke.Entry{Issuer: iss, Kind: revoke.KindJTI, Value: "j3"}); !errors.Is(err, revoke.ErrUnavailable) {
		t.Errorf("Add() with Redis down = %v, want ErrUnavailable", err)
	}
	eventually(t, 10*time.Second, "stale", func() bool { return check(b, "j-other") == revoke.ErrStale })
	if err := check(b, "j2"); !errors.Is(err, revoke.ErrStale) {
		t.Errorf("stale Check() of a revoked token = %v, want stale (never nil)", err)
	}

	srv.start()
	eventually(t, 15*time.Second, "resync", synced(a))
	eventually(t, 15*time.Second, "resync", synced(b))
	for _, st := range []*revoke.Redis{a, b} {
		if err := check(st, "j2"); !errors.Is(err, revoke.ErrRevoked) {
			t.Errorf("after Redis came back, Check(j2) = %v, want revoked", err)
		}
		if err := check(st, "j1"); err != nil {
			t.Errorf("after Redis came back, Check(lifted j1) = %v, want nil", err)
		}
		if es, err := st.List(ctx, iss); err != nil || len(es) != 1 || es[0].ID != kept.ID {
			t.Errorf("List() = %v, %v, want [%s]", es, err, kept.ID)
		}
	}
	// A replica that starts now reads everything.
	c := newStore(t, srv, 3*time.Second)
	eventually(t, 10*time.Second, "first sync", synced(c))
	if err := check(c, "j2"); !errors.Is(err, revoke.ErrRevoked) {
		t.Errorf("a new replica's Check(j2) = %v, want revoked", err)
	}
}

func TestNewRedisRefuses(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, tt := range []struct {
		name string
		o    revoke.RedisOptions
	}{
		{"no-client", revoke.RedisOptions{Retention: time.Hour}},
		{"no-retention", revoke.RedisOptions{Client: c}},
		{"no-hash-tag", revoke.RedisOptions{Client: c, Retention: time.Hour, KeyPrefix: "jwksverify:revoke"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if st, err := revoke.NewRedis(tt.o); err == nil {
				st.Close()
				t.Error("NewRedis() = nil error")
			}
		})
	}
}
