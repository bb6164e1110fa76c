package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// goroutines reads go_goroutines from the binary's /metrics at base
// through c.
func goroutines(t *testing.T, c *http.Client, base string) int {
	t.Helper()
	return int(metricValue(t, c, base, "go_goroutines"))
}

// metricValue reads the value of the unlabelled metric name from the
// binary's /metrics at base through c.
func metricValue(t *testing.T, c *http.Client, base, name string) float64 {
	t.Helper()
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

// TestGRPCStreamNeverHalfClosedIsBounded: a client opens gRPC streams
// (HEADERS without END_STREAM) on the gRPC listener and never sends the
// request message. Each stream holds a handler goroutine blocked on the
// message; the HTTP listener bounds the same request (headers read, body
// never sent) by its read timeout (10s + W), and the gRPC listener must bound
// it too: within 3× the read timeout the streams are gone, each ended with
// DEADLINE_EXCEEDED. grpc-go has no server-side per-call bound and
// MaxConnectionIdle counts only a connection without streams, so they were
// held for as long as the client kept the connection. A health Watch is no
// exception until its request came (its handler reads the request before
// Watch runs); once it came, a Watch lives as long as its client watches:
// one opened before the silent streams still reports the drain after they
// were ended.
func TestGRPCStreamNeverHalfClosedIsBounded(t *testing.T) {
	tests := []struct {
		name string
		path string
	}{
		{"authorization-check", "/envoy.service.auth.v3.Authorization/Check"},
		{"health-watch", "/grpc.health.v1.Health/Watch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each waits out a timeout: beside each other and the HTTP/2 one
			dir := t.TempDir()
			writeFile(t, dir, "jwks.json", testJWKS())
			cfg := writeFile(t, dir, "cfg.yaml", []byte(`
listen: 127.0.0.1:0
issuers: [{issuer: "https://a.test/", jwks_file: jwks.json}]
`))
			p := startBin(t, nil, nil, "serve", "--config", cfg, "--grpc-listen", "127.0.0.1:0")
			line := p.waitLog(t, "listening")
			base := "http://" + line["http"].(string)
			addr := line["grpc"].(string)
			waitReadyz(t, base)

			// A Watch that sent its request, open before the silent streams.
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			wctx, wcancel := context.WithCancel(context.Background())
			defer wcancel()
			watchOpened := time.Now()
			watch, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("Watch Recv() = %v, %v; want SERVING", resp.GetStatus(), err)
			}
			before := goroutines(t, http.DefaultClient, base)

			const streams = 200
			ended := silentStreams(t, addr, tt.path, streams)
			held := reach(15*time.Second, before+streams/2, func() int { return goroutines(t, http.DefaultClient, base) })
			t.Logf("goroutines: %d before, %d with %d silent streams", before, held, streams)
			if held < before+streams/2 {
				t.Fatalf("the streams hold no goroutines (%d before, %d after): the test does not reach the handler", before, held)
			}
			readTimeout := 11 * time.Second // 10s + W, W = 1s for a local jwks_file
			after := settle(3*readTimeout, before+streams/4, func() int { return goroutines(t, http.DefaultClient, base) })
			if after > before+streams/4 {
				t.Fatalf("after 3× the read timeout (%s) the %d silent gRPC streams still hold %d goroutines (%d before, %d after)",
					3*readTimeout, streams, after-before, before, after)
			}
			if n := reach(10*time.Second, streams, func() int { return ended()[codes.DeadlineExceeded] }); n != streams {
				t.Errorf("%d of the %d silent streams ended with DeadlineExceeded (ended: %v)", n, streams, ended())
			}

			// The Watch outlived the bound and still reports a change.
			if lived := time.Since(watchOpened); lived < 10*time.Second {
				t.Fatalf("the Watch lived %s, less than the read timeout: the test proves nothing", lived)
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
				t.Errorf("Watch Recv() after SIGTERM, %s after it opened = %v, %v; want NOT_SERVING",
					time.Since(watchOpened).Round(time.Second), resp.GetStatus(), err)
			}
		})
	}
}

// silentStreams opens n streams calling path on the gRPC listener at addr
// (plaintext HTTP/2: HEADERS without END_STREAM) and never sends their
// request message. It returns a function counting the streams the server
// ended, by the status code of their grpc-status.
func silentStreams(t *testing.T, addr, path string, n int) (ended func() map[codes.Code]int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	var (
		wmu    sync.Mutex // the framer's writes are not safe for concurrent use
		smu    sync.Mutex
		status = map[uint32]string{} // grpc-status by stream
	)
	wmu.Lock()
	defer wmu.Unlock()
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	go func() { // read and answer the server's frames (SETTINGS ack, pings) until the connection closes
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					wmu.Lock()
					_ = fr.WriteSettingsAck()
					wmu.Unlock()
				}
			case *http2.MetaHeadersFrame:
				for _, h := range f.RegularFields() {
					if h.Name == "grpc-status" {
						smu.Lock()
						status[f.StreamID] = h.Value
						smu.Unlock()
					}
				}
			}
		}
	}()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range n {
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", path},
			{":authority", "x"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	return func() map[codes.Code]int {
		smu.Lock()
		defer smu.Unlock()
		m := map[codes.Code]int{}
		for _, v := range status {
			c, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				c = uint64(codes.Unknown)
			}
			m[codes.Code(c)]++
		}
		return m
	}
}

// TestHTTP2UnreadResponsesBounded: on the TLS listener (ALPN h2), a client
// opens a connection with the largest flow-control windows, asks for
// /metrics on many streams and never reads. The server's writes block on
// the full socket; a response not read within the write timeout (20s + W)
// must not hold the connection nor its handlers beyond it (API.md: "the
// connection is closed"), as over HTTP/1.1, where the write deadline does
// so. HTTP/2 sets no deadline on the connection (net/http's HTTP2Config
// WriteByteTimeout is zero unless set): each stream's write timeout queues a
// RST_STREAM behind the blocked write, the stream is closed only once that
// frame is written, so the handlers, the connection and its buffered
// responses are held for as long as the client keeps the socket open —
// the idle timeout never starts while the streams stay open.
func TestHTTP2UnreadResponsesBounded(t *testing.T) {
	t.Parallel() // it waits out a timeout: beside the other one
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	ca := testkeys.NewCA("slow-clients")
	crt, key := ca.WriteServer(dir, "127.0.0.1")
	cfg := writeFile(t, dir, "cfg.yaml", []byte(`
listen: 127.0.0.1:0
tls: {cert_file: `+crt+`, key_file: `+key+`}
issuers: [{issuer: "https://a.test/", jwks_file: jwks.json}]
`))
	p := startBin(t, nil, nil, "serve", "--config", cfg)
	line := p.waitLog(t, "listening")
	addr := line["http"].(string)
	base := "https://" + addr
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}}
	deadlineReady := time.Now().Add(20 * time.Second)
	for {
		resp, err := h1.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadlineReady) {
			t.Fatalf("not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	count := func() int { return goroutines(t, h1, base) }
	before := count()

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := tls.Client(raw, &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if c.ConnectionState().NegotiatedProtocol != "h2" {
		t.Fatalf("ALPN %q, want h2", c.ConnectionState().NegotiatedProtocol)
	}
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1}); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteWindowUpdate(0, 1<<31-1-65535); err != nil {
		t.Fatal(err)
	}
	// The server's SETTINGS must be acknowledged before it honours ours.
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
			if err := fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	const streams = 200
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range streams {
		hb.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":path", "/metrics"}, {":authority", addr}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: true}); err != nil {
			t.Fatal(err)
		}
	}
	// Never read again.
	held := reach(15*time.Second, before+streams/2, count)
	t.Logf("goroutines: %d before, %d with %d unread streams", before, held, streams)
	if held < before+streams/2 {
		t.Fatalf("the unread streams hold no goroutines (%d before, %d after): the test does not reach the blocked write", before, held)
	}
	writeTimeout := 21 * time.Second // 20s + W, W = 1s for a local jwks_file
	after := settle(3*writeTimeout, before+streams/4, count)
	if after > before+streams/4 {
		t.Fatalf("after 3× the write timeout (%s), the unread HTTP/2 connection still holds %d goroutines (%d before, %d after)",
			3*writeTimeout, after-before, before, after)
	}
}

// settle polls count every half second until it is at most limit or within
// d (3× the timeout the server must enforce: generous on a busy machine),
// and returns its last value.
func settle(d time.Duration, limit int, count func() int) int {
	deadline := time.Now().Add(d)
	for {
		n := count()
		if n <= limit || time.Now().After(deadline) {
			return n
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// reach polls count every 100 ms until it is at least limit or d has
// passed, and returns its last value: the server needs a moment to start
// a handler for each stream, more on a busy machine.
func reach(d time.Duration, limit int, count func() int) int {
	deadline := time.Now().Add(d)
	for {
		n := count()
		if n >= limit || time.Now().After(deadline) {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
}
