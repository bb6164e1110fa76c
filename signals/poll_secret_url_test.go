package signals_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/signals"
)

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
	var logs testlog.Buffer
	p, err := signals.NewPoller(signals.PollOptions{URL: "http://" + addr + "/poll?api_key=" + secret, InsecureAllowHTTP: true,
		Interval: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Receive: func(context.Context, string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	// Poll for the line itself (it is written after the failure is
	// counted), with a deadline a busy machine meets.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "SET poll failed") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p.Close()
	out := logs.String()
	if !strings.Contains(out, "SET poll failed") {
		t.Fatalf("no failure line within 30s: nothing was tested: %q", out)
	}
	if strings.Contains(out, secret) {
		t.Fatalf("the poll failure's log line holds the URL's query credential: %s", out)
	}
}
