package redisconn_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
)

func TestCheckOptions(t *testing.T) {
	const u = "redis://127.0.0.1:1"
	tests := []struct {
		name  string
		o     redisconn.Options
		field string // "": accepted; "-": refused naming no field
	}{
		{"url", redisconn.Options{URL: u, Timeout: redisconn.MinTimeout, PoolSize: redisconn.MaxPoolSize, AcknowledgeReplicas: redisconn.MaxAcknowledgeReplicas}, ""},
		{"sentinel", redisconn.Options{Sentinel: redisconn.Sentinel{Master: "m", Addrs: []string{"a:1", "b:2"}}, Timeout: redisconn.MaxTimeout}, ""},
		{"cluster", redisconn.Options{Cluster: redisconn.Cluster{Addrs: []string{"a:1"}}, Username: "u", PasswordFile: "pw", TLS: redisconn.TLS{CAFile: "ca"}}, ""},
		{"rediss-tls", redisconn.Options{URL: "rediss://h:1", TLS: redisconn.TLS{CertFile: "c", KeyFile: "k"}}, ""},
		{"nothing", redisconn.Options{}, "URL"},
		{"bad-url", redisconn.Options{URL: "http://h:1"}, "URL"},
		{"url-and-cluster", redisconn.Options{URL: u, Cluster: redisconn.Cluster{Addrs: []string{"a:1"}}}, "-"},
		{"url-and-sentinel-password", redisconn.Options{URL: u, Sentinel: redisconn.Sentinel{PasswordFile: "p"}}, "-"},
		{"timeout-low", redisconn.Options{URL: u, Timeout: redisconn.MinTimeout - 1}, "Timeout"},
		{"timeout-high", redisconn.Options{URL: u, Timeout: redisconn.MaxTimeout + 1}, "Timeout"},
		{"pool-negative", redisconn.Options{URL: u, PoolSize: -1}, "PoolSize"},
		{"pool-high", redisconn.Options{URL: u, PoolSize: redisconn.MaxPoolSize + 1}, "PoolSize"},
		{"replicas-negative", redisconn.Options{URL: u, AcknowledgeReplicas: -1}, "AcknowledgeReplicas"},
		{"replicas-high", redisconn.Options{URL: u, AcknowledgeReplicas: redisconn.MaxAcknowledgeReplicas + 1}, "AcknowledgeReplicas"},
		{"key-without-cert", redisconn.Options{URL: "rediss://h:1", TLS: redisconn.TLS{KeyFile: "k"}}, "TLS.CertFile"},
		{"cert-without-key", redisconn.Options{URL: "rediss://h:1", TLS: redisconn.TLS{CertFile: "c"}}, "TLS.KeyFile"},
		{"tls-with-redis-scheme", redisconn.Options{URL: u, TLS: redisconn.TLS{CAFile: "ca"}}, "TLS"},
		{"username-without-password", redisconn.Options{URL: u, Username: "u"}, "Username"},
		{"username-twice", redisconn.Options{URL: "redis://a@h:1", Username: "u", PasswordFile: "p"}, "Username"},
		{"password-twice", redisconn.Options{URL: "redis://:pw@h:1", PasswordFile: "p"}, "PasswordFile"},
		{"sentinel-no-master", redisconn.Options{Sentinel: redisconn.Sentinel{Addrs: []string{"a:1"}}}, "Sentinel.Master"},
		{"sentinel-no-addrs", redisconn.Options{Sentinel: redisconn.Sentinel{Master: "m"}}, "Sentinel.Addrs"},
		{"sentinel-bad-addr", redisconn.Options{Sentinel: redisconn.Sentinel{Master: "m", Addrs: []string{"a:1", "a"}}}, "Sentinel.Addrs[1]"},
		{"cluster-port-zero", redisconn.Options{Cluster: redisconn.Cluster{Addrs: []string{"a:0"}}}, "Cluster.Addrs[0]"},
		{"cluster-duplicate", redisconn.Options{Cluster: redisconn.Cluster{Addrs: []string{"a:1", "b:1", "a:1"}}}, "Cluster.Addrs[2]"},
		{"sentinel-url", redisconn.Options{Sentinel: redisconn.Sentinel{Master: "m", Addrs: []string{"redis://u:s3cret@a:26379"}}}, "Sentinel.Addrs[0]"},
		{"cluster-user-info", redisconn.Options{Cluster: redisconn.Cluster{Addrs: []string{"u:s3cret@a:7000"}}}, "Cluster.Addrs[0]"},
		{"cluster-ipv6", redisconn.Options{Cluster: redisconn.Cluster{Addrs: []string{"[::1]:7000", "[fe80::1%eth0]:7001"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := redisconn.CheckOptions(tt.o)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("CheckOptions() = %v, want nil", err)
				}
				return
			}
			var oe *redisconn.OptionError
			if !errors.Is(err, redisconn.ErrInvalidOptions) || !errors.As(err, &oe) {
				t.Fatalf("CheckOptions() = %v, want an OptionError", err)
			}
			if want := strings.TrimPrefix(tt.field, "-"); oe.Field != want {
				t.Errorf("CheckOptions() names field %q, want %q (%v)", oe.Field, want, err)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("CheckOptions() = %q: it repeats a password", err)
			}
			if _, err := redisconn.New(tt.o); !errors.Is(err, redisconn.ErrInvalidOptions) {
				t.Errorf("New() = %v, want %v", err, redisconn.ErrInvalidOptions)
			}
		})
	}
}

func TestCheckURLHidesPassword(t *testing.T) {
	for _, u := range []string{"", "http://x", "redis://:secret@host:notaport/x/y"} {
		if err := redisconn.CheckURL(u); err == nil {
			t.Errorf("CheckURL(%q) = nil", u)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckURL error %q repeats the password", err)
		}
	}
	for _, u := range []string{"redis://127.0.0.1:6379", "rediss://user:pw@redis.example.com:6380/2"} {
		if err := redisconn.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q) = %v", u, err)
		}
	}
}

// TestSame: a reload keeps the client only for equal options.
func TestSame(t *testing.T) {
	base := redisconn.Options{Sentinel: redisconn.Sentinel{Master: "m", Addrs: []string{"a:1", "b:1"}}, Timeout: 100 * time.Millisecond}
	tests := []struct {
		name   string
		change func(*redisconn.Options)
		want   bool
	}{
		{"equal", func(*redisconn.Options) {}, true},
		{"addrs", func(o *redisconn.Options) { o.Sentinel.Addrs = []string{"a:1"} }, false},
		{"master", func(o *redisconn.Options) { o.Sentinel.Master = "n" }, false},
		{"timeout", func(o *redisconn.Options) { o.Timeout = time.Second }, false},
		{"pool-size", func(o *redisconn.Options) { o.PoolSize = 3 }, false},
		{"replicas", func(o *redisconn.Options) { o.AcknowledgeReplicas = 1 }, false},
		{"password-file", func(o *redisconn.Options) { o.PasswordFile = "p" }, false},
		{"tls", func(o *redisconn.Options) { o.TLS.CAFile = "ca" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := base
			b.Sentinel.Addrs = append([]string(nil), base.Sentinel.Addrs...)
			tt.change(&b)
			if got := redisconn.Same(base, b); got != tt.want {
				t.Errorf("Same() = %t, want %t", got, tt.want)
			}
		})
	}
}

// newClient builds a client of o, closed by the test.
func newClient(t *testing.T, o redisconn.Options) *redisconn.Client {
	t.Helper()
	c, err := redisconn.New(o)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pingEventually pings through c until it answers (at most 10s).
func pingEventually(t *testing.T, c redis.UniversalClient, when string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: Ping() = %v for 10s", when, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a server
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPasswordFileRotation: an ACL user's password from a file; after the
// password changes in Redis and in the file, the next connection uses the
// new one without a new client; a wrong or unreadable password fails.
func TestPasswordFileRotation(t *testing.T) {
	srv := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">first-password", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(t.TempDir(), "pw")
	writeFile(t, pw, "first-password\n")
	c := newClient(t, redisconn.Options{URL: srv.URL(), Username: "app", PasswordFile: pw, Timeout: 2 * time.Second})
	if who, err := c.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != "app" {
		t.Fatalf("ACL WHOAMI = %q, %v; want app", who, err)
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "resetpass", ">second-password-longer").Err(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, pw, "second-password-longer\n")
	if err := admin.Do(ctx, "CLIENT", "KILL", "USER", "app").Err(); err != nil {
		t.Fatal(err)
	}
	pingEventually(t, c, "after the rotation")

	t.Run("wrong-password", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "pw")
		writeFile(t, bad, "not-it")
		c := newClient(t, redisconn.Options{URL: srv.URL(), Username: "app", PasswordFile: bad})
		if err := c.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("Ping() with a wrong password = %v, want WRONGPASS", err)
		}
	})
	t.Run("file-gone", func(t *testing.T) {
		gone := filepath.Join(t.TempDir(), "pw")
		writeFile(t, gone, "second-password-longer")
		c := newClient(t, redisconn.Options{URL: srv.URL(), Username: "app", PasswordFile: gone})
		if err := os.Remove(gone); err != nil {
			t.Fatal(err)
		}
		if err := c.Ping(ctx).Err(); !errors.Is(err, redisconn.ErrCredentials) {
			t.Errorf("Ping() with the password file gone = %v, want %v", err, redisconn.ErrCredentials)
		}
	})
	t.Run("missing-at-start", func(t *testing.T) {
		_, err := redisconn.New(redisconn.Options{URL: srv.URL(), PasswordFile: filepath.Join(t.TempDir(), "none")})
		var oe *redisconn.OptionError
		if !errors.As(err, &oe) || oe.Field != "PasswordFile" {
			t.Errorf("New() with no password file = %v, want an OptionError of PasswordFile", err)
		}
	})
}

// TestWriteAcknowledgeReplicas: with AcknowledgeReplicas a write succeeds
// once a replica holds it, and fails with ErrNotReplicated when fewer
// replicas answer WAIT.
func TestWriteAcknowledgeReplicas(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	defer rc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, _ := rc.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not sync within 10s: %s", info)
		}
		time.Sleep(50 * time.Millisecond) // polling a server
	}
	// WAIT gives up after half the Timeout, and the call has the other
	// half for the rest (the dial, the SET, the answers): with 1s that was
	// 500ms, and a loaded 2-core machine missed it ("set: i/o timeout"
	// where ErrNotReplicated was due). 4s leaves 2s.
	const timeout = 4 * time.Second
	ctx := context.Background()
	set := func(c *redisconn.Client, key string) error {
		_, err := c.Write(ctx, key, func(p redis.Pipeliner) { p.Set(ctx, key, "v", time.Minute) })
		return err
	}
	tests := []struct {
		name     string
		replicas int
		wantErr  error
	}{
		{"none-asked", 0, nil},
		{"one-replica", 1, nil},
		{"more-than-there-are", 2, redisconn.ErrNotReplicated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, redisconn.Options{URL: master.URL(), AcknowledgeReplicas: tt.replicas, Timeout: timeout})
			key := "k:" + tt.name
			if err := set(c, key); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Write() = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				if s := c.Stats(); s.NotReplicated != 1 {
					t.Errorf("Stats() = %+v, want NotReplicated 1", s)
				}
				return
			}
			if tt.replicas > 0 {
				// Acknowledged means the replica has it now.
				if v, err := rc.Get(ctx, key).Result(); v != "v" || err != nil {
					t.Errorf("replica GET = %q, %v; want v", v, err)
				}
			}
		})
	}
	t.Run("command-error-wins-over-wait", func(t *testing.T) {
		// The replica acknowledges the pipeline; a command of it failed
		// all the same, and that is the answer.
		c := newClient(t, redisconn.Options{URL: master.URL(), AcknowledgeReplicas: 1, Timeout: timeout})
		_, err := c.Write(ctx, "k:notanumber", func(p redis.Pipeliner) {
			p.Set(ctx, "k:notanumber", "v", time.Minute)
			p.Incr(ctx, "k:notanumber")
		})
		if err == nil || !strings.Contains(err.Error(), "incr") || errors.Is(err, redisconn.ErrNotReplicated) {
			t.Errorf("Write() = %v, want the INCR's error", err)
		}
	})
	t.Run("replica-gone", func(t *testing.T) {
		c := newClient(t, redisconn.Options{URL: master.URL(), AcknowledgeReplicas: 1, Timeout: timeout})
		if s := c.Stats(); s.Errors != 0 {
			t.Errorf("Stats() = %+v before any failure, want no errors", s)
		}
		replica.Stop()
		if err := set(c, "k:gone"); !errors.Is(err, redisconn.ErrNotReplicated) {
			t.Errorf("Write() with the replica gone = %v, want %v", err, redisconn.ErrNotReplicated)
		}
	})
	t.Run("errors-counted", func(t *testing.T) {
		c := newClient(t, redisconn.Options{URL: "redis://127.0.0.1:1", Timeout: 100 * time.Millisecond})
		if err := set(c, "k"); err == nil {
			t.Fatal("Write() to a closed port = nil")
		}
		_ = c.Get(ctx, "k").Err()
		if s := c.Stats(); s.Errors != 2 {
			t.Errorf("Stats() = %+v, want 2 errors (a pipeline, a command)", s)
		}
	})
	t.Run("nil-is-an-answer", func(t *testing.T) {
		c := newClient(t, redisconn.Options{URL: master.URL()})
		var get *redis.StringCmd
		if _, err := c.Write(ctx, "k:absent", func(p redis.Pipeliner) { get = p.Get(ctx, "k:absent") }); err != nil {
			t.Fatalf("Write() = %v, want nil (redis.Nil is an answer)", err)
		}
		if !errors.Is(get.Err(), redis.Nil) {
			t.Errorf("GET = %v, want redis.Nil", get.Err())
		}
	})
}

// TestTLS: a TLS-only Redis that requires client certificates answers a
// client with the CA and a client certificate, and refuses the others
// with an error (never a silent plaintext fallback).
func TestTLS(t *testing.T) {
	files := redistest.NewTLSFiles(t)
	srv := redistest.StartTLS(t, files)
	url := "rediss://" + srv.Addr()
	good := redisconn.TLS{CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey}
	tests := []struct {
		name   string
		o      redisconn.Options
		wantOK bool
	}{
		{"ca-and-client-cert", redisconn.Options{URL: url, TLS: good}, true},
		{"no-client-cert", redisconn.Options{URL: url, TLS: redisconn.TLS{CAFile: files.CA}}, false},
		{"wrong-ca", redisconn.Options{URL: url, TLS: redisconn.TLS{CAFile: files.OtherCA, CertFile: files.ClientCert, KeyFile: files.ClientKey}}, false},
		{"plaintext-to-tls", redisconn.Options{URL: "redis://" + srv.Addr()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Timeout = 2 * time.Second
			c := newClient(t, tt.o)
			err := c.Ping(context.Background()).Err()
			if tt.wantOK != (err == nil) {
				t.Errorf("Ping() = %v, want ok %t", err, tt.wantOK)
			}
		})
	}
	t.Run("bad-ca-file", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "ca.pem")
		writeFile(t, bad, "not PEM")
		_, err := redisconn.New(redisconn.Options{URL: url, TLS: redisconn.TLS{CAFile: bad}})
		var oe *redisconn.OptionError
		if !errors.As(err, &oe) || oe.Field != "TLS.CAFile" {
			t.Errorf("New() with a CA file without PEM = %v, want an OptionError of TLS.CAFile", err)
		}
	})
	t.Run("key-not-the-certs", func(t *testing.T) {
		_, err := redisconn.New(redisconn.Options{URL: url, TLS: redisconn.TLS{CertFile: files.ClientCert, KeyFile: files.ServerKey}})
		var oe *redisconn.OptionError
		if !errors.As(err, &oe) || oe.Field != "TLS.CertFile" {
			t.Errorf("New() with a key of another certificate = %v, want an OptionError of TLS.CertFile", err)
		}
	})
}
