package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/service"
)

// TestGRPCUnreadResponsesBounded: a client of the gRPC listener opens a
// connection with the largest flow-control windows, sends Check calls
// without reading their answers, then reads 16 KiB a second. The server's
// writes block on the full socket;
// as on the HTTP listener (HTTP/1.1's write deadline, HTTP/2's
// WriteByteTimeout), a write that makes no progress for the write timeout
// must close the connection. grpc-go has no write timeout: its writer
// blocks for good, the calls' streams are never cleaned up (so the
// connection is never idle, and MaxConnectionIdle never starts), and the
// connection, its goroutines and its queued answers were held for as long
// as the client kept the socket and read a little now and then.
func TestGRPCUnreadResponsesBounded(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte(`
listen: 127.0.0.1:0
grpc_listen: 127.0.0.1:0
issuers: [{issuer: "https://a.test/", jwks_file: jwks.json}]
`))
	plan, err := config.Load(cfg, config.Overrides{}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	// Only the write timeout is short: the calls end at once, and a
	// connection the server keeps is idle for far longer than the test.
	plan.HTTP = config.Timeouts{ReadHeader: 5 * time.Second, Read: time.Minute, Write: 300 * time.Millisecond, Idle: time.Hour, Wait: time.Second}
	logger := slog.New(slog.DiscardHandler)
	svc, err := service.New(plan, service.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	a := &app{stdout: io.Discard, stderr: io.Discard}
	srv, code := a.newServers(svc, plan, logger)
	if srv == nil {
		t.Fatalf("newServers: exit %d", code)
	}
	defer srv.ln.Close()
	go func() { _ = srv.grpc.Serve(srv.gln) }()
	defer srv.grpc.Stop()

	c, err := net.Dial("tcp", srv.gln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for { // the server's SETTINGS, acknowledged; then never read again
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

	// Calls until the server stops reading: its writer is blocked (its
	// answers to pings and refused streams queue up, and it stops reading
	// past 50 of them) or the connection is gone.
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	calls := 0
	for i := range 1 << 20 {
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/envoy.service.auth.v3.Authorization/Check"},
			{":authority", "x"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		id := uint32(2*i + 1)
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			break
		}
		if err := fr.WriteData(id, true, []byte{0, 0, 0, 0, 0}); err != nil {
			break
		}
		calls++
	}
	t.Logf("%d calls sent before the server stopped reading", calls)

	// The client now reads a little every second: the connection's window
	// never stays shut (the kernel's TCP_USER_TIMEOUT, which grpc-go sets to
	// its keepalive timeout of 20s, aborts a connection only while it is),
	// yet each of the server's writes waits far longer than the write
	// timeout (300 ms) for room. Within 40s, the server has closed the
	// connection: a read ends with EOF or a reset, not with data.
	buf := make([]byte, 16<<10)
	read := 0
	for start := time.Now(); time.Since(start) < 40*time.Second; time.Sleep(time.Second) {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(buf)
		read += n
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("nothing to read for 10s after %d bytes: the server's writer was not blocked, the test does not reach it", read)
		}
		if err != nil {
			t.Logf("%d bytes, then %v", read, err)
			return
		}
	}
	t.Fatalf("40s after its client stopped reading but for 16 KiB a second, the server still writes to it (%d bytes read): its writes, 130× the write timeout, did not close it", read)
}
