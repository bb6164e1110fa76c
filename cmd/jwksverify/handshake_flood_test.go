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

// TestHandshakeErrorsBounded: every failed TLS handshake on the tls
// listener writes one warn line (net/http's ErrorLog), with no bound: an
// unauthenticated client that opens and drops connections writes as many
// log lines as it likes, where every other line an unauthenticated
// caller causes (rejections, client authentication failures, logout and
// SET refusals) is held to log.rejections_per_second (20) with a summary.
// 1000 dropped connections: a bound of 20 a second would log at most
// 20 per second the test runs plus its summaries.
func TestHandshakeErrorsBounded(t *testing.T) {
	pair, err := tls.X509KeyPair(testkeys.NewCA("handshake CA").Issue("localhost", false))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	srv := newHTTPServer(http.NotFoundHandler(), config.Timeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second,
		Write: 10 * time.Second, Idle: time.Minute}, logger)
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
	ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}})
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	const n = 1000
	start := time.Now()
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("\x16\x03\x01\x00\x04junk")) // not a ClientHello
		c.Close()
	}
	for deadline := time.Now().Add(time.Minute); closed.Load() < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections closed after a minute", closed.Load(), n)
		}
	}
	secs := int(time.Since(start)/time.Second) + 1
	got := strings.Count(logs.String(), "TLS handshake error")
	t.Logf("%d handshake error lines for %d connections in %ds", got, n, secs)
	if limit := secs * (20 + 1); got > limit {
		t.Errorf("%d handshake error lines in %ds, above %d (20 a second and a summary)", got, secs, limit)
	}
}
