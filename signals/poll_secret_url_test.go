package signals_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/signals"
)

// lockedBuffer is a log sink the poller's goroutine writes to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPollFailureLogNeverHoldsTheURLsQuery: a poll URL's query may carry a
// credential (an API key, a pre-signed URL's signature), which jwks and
// introspect never repeat (their redact keeps scheme, host and path). A
// failed poll is logged at warn: its line must not hold the query either.
func TestPollFailureLogNeverHoldsTheURLsQuery(t *testing.T) {
	const secret = "poll-query-credential-0123456789"
	// A port nothing listens on: the poll fails to connect.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logs lockedBuffer
	p, err := signals.NewPoller(signals.PollOptions{URL: "http://" + addr + "/poll?api_key=" + secret, InsecureAllowHTTP: true,
		Interval: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Receive: func(context.Context, string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().Failures == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the line is written after the count
	p.Close()
	if p.Stats().Failures == 0 {
		t.Fatal("no failed poll within 5s: nothing was tested")
	}
	out := logs.String()
	if !strings.Contains(out, "SET poll failed") {
		t.Fatalf("no failure line: %q", out)
	}
	if strings.Contains(out, secret) {
		t.Fatalf("the poll failure's log line holds the URL's query credential: %s", out)
	}
}
