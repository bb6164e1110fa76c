package main

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
)

// TestServerErrorLineBounded: a client that offers only protocols the
// listener does not speak (ALPN: "h2" and "http/1.1" are offered) fails
// its handshake with crypto/tls's error quoting every protocol it sent,
// and net/http's ErrorLog wrote that whole: one ClientHello of 60 KiB of
// control bytes made a line of a quarter of a megabyte, twenty a second
// under the rate limit. The line an unauthenticated client shapes is
// bounded like every other value it shapes.
func TestServerErrorLineBounded(t *testing.T) {
	pair, err := tls.X509KeyPair(testkeys.NewCA("handshake CA").Issue("localhost", false))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			logs := &testlog.Buffer{}
			var h slog.Handler = slog.NewJSONHandler(logs, nil)
			if format == "text" {
				h = slog.NewTextHandler(logs, nil)
			}
			srv := newHTTPServer(http.NotFoundHandler(), config.Timeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second,
				Write: 10 * time.Second, Idle: time.Minute}, slog.New(h))
			var closed atomic.Int64
			track := srv.ConnState
			srv.ConnState = func(c net.Conn, st http.ConnState) {
				track(c, st)
				if st == http.StateClosed {
					closed.Add(1)
				}
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2", "http/1.1"}})
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })

			proto := strings.Repeat("\x01", 255)
			protos := make([]string, 230) // 230 × 256 bytes: under the ClientHello's 64 KiB
			for i := range protos {
				protos[i] = proto
			}
			c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: protos})
			if err == nil {
				c.Close()
				t.Fatal("the handshake succeeded")
			}
			for deadline := time.Now().Add(time.Minute); closed.Load() < 1; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the connection was not closed after a minute")
				}
			}
			out := logs.String()
			if !strings.Contains(out, "TLS handshake error") {
				t.Fatalf("no handshake error logged: %q", out)
			}
			for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
				if len(line) > 4096 {
					t.Errorf("a log line of %d bytes (%.200q…), want at most 4096", len(line), line)
				}
			}
		})
	}
}
