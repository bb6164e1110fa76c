package signals_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/signals"
)

// TestPollFailureLogBoundsTheStatusLine: a transmitter that answers
// anything but 200 is logged "SET poll failed" with its status, and the
// status line's reason phrase is the transmitter's text, of any length the
// client reads (the poller's own client reads 64 KiB of headers): it was
// repeated whole at every poll. jwks and introspect keep only the status code; the line
// holds at most a bounded reason.
func TestPollFailureLogBoundsTheStatusLine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	reason := strings.Repeat("\x1b[2J", 12<<10) // 48 KiB of terminal escapes, within the header bound
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for { // the request's header, then answer
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				c.Write([]byte("HTTP/1.1 503 " + reason + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}()
		}
	}()
	var logs testlog.Buffer
	p, err := signals.NewPoller(signals.PollOptions{URL: "http://" + l.Addr().String() + "/poll", InsecureAllowHTTP: true,
		Interval: time.Second, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Receive: func(context.Context, string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "SET poll failed") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p.Close()
	out := logs.String()
	if !strings.Contains(out, "SET poll failed") || !strings.Contains(out, "503") {
		t.Fatalf("no failure line naming the status within 30s: nothing was tested: %.300q", out)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if len(line) > 4096 {
			t.Errorf("a log line of %d bytes (%.200q…), want at most 4096", len(line), line)
		}
	}
}
