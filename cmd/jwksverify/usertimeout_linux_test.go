package main

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGRPCListenerKeepsTCPUserTimeout: the gRPC listener's connections are
// its own (write bound, drain), so grpc-go no longer sees a *net.TCPConn to
// set TCP_USER_TIMEOUT on; the listener sets it, to grpc-go's 20 s.
func TestGRPCListenerKeepsTCPUserTimeout(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := userTimeoutListener{raw}
	defer l.Close()
	go func() {
		if c, err := net.Dial("tcp", raw.Addr().String()); err == nil {
			defer c.Close()
			var b [1]byte
			_, _ = c.Read(b[:])
		}
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	if got != int(grpcUserTimeout.Milliseconds()) {
		t.Errorf("TCP_USER_TIMEOUT = %d ms, want %d", got, grpcUserTimeout.Milliseconds())
	}
}
