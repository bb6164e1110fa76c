package signals_test

import (
	"context"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/signals"
)

// waitStats polls p's counters until done says so or 30 s pass (a bound a
// busy machine cannot miss: each case needs one poll).
func waitStats(p *signals.Poller, done func(signals.PollStats) bool) signals.PollStats {
	deadline := time.Now().Add(30 * time.Second)
	for !done(p.Stats()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return p.Stats()
}

// TestPollerTrustsCAFile: a transmitter behind a private CA (the issuer's
// ca_file, which its discovery, JWKS and introspection calls trust) is
// polled with that CA, and refused without it.
func TestPollerTrustsCAFile(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sets":{}}`))
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		caFile string
		polled bool
	}{
		{"ca-file", ca, true},
		{"system-roots", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := signals.NewPoller(signals.PollOptions{URL: srv.URL + "/poll", CAFile: tt.caFile,
				Logger:  slog.New(slog.DiscardHandler),
				Receive: func(context.Context, string) error { return nil }})
			if err != nil {
				t.Fatal(err)
			}
			st := waitStats(p, func(s signals.PollStats) bool { return s.Polls+s.Failures > 0 })
			p.Close()
			if got := st.Polls > 0; got != tt.polled {
				t.Fatalf("stats %+v: polled = %v, want %v", st, got, tt.polled)
			}
		})
	}
}

// TestPollerCAFileWithoutCertificate: a CAFile that holds no certificate is
// an option error, not a poller trusting the system's roots.
func TestPollerCAFileWithoutCertificate(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(bad, []byte("no certificate here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := signals.NewPoller(signals.PollOptions{URL: "https://tx.example/poll", CAFile: bad,
		Receive: func(context.Context, string) error { return nil }})
	if p != nil {
		p.Close()
	}
	var oe *signals.OptionError
	if !errors.As(err, &oe) || oe.Field != "CAFile" {
		t.Fatalf("NewPoller() = %v, want an OptionError of CAFile", err)
	}
}

// TestPollerBoundsResponseHeaders: the poller's own client reads at most
// 64 KiB of a response's headers (net/http's default is 10 MB).
func TestPollerBoundsResponseHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 4 {
			w.Header().Set("X-Filler-"+string(rune('a'+i)), strings.Repeat("x", 32<<10))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sets":{}}`))
	}))
	defer srv.Close()
	p, err := signals.NewPoller(signals.PollOptions{URL: srv.URL + "/poll", InsecureAllowHTTP: true,
		Logger:  slog.New(slog.DiscardHandler),
		Receive: func(context.Context, string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	st := waitStats(p, func(s signals.PollStats) bool { return s.Polls+s.Failures > 0 })
	p.Close()
	if st.Polls != 0 || st.Failures == 0 {
		t.Fatalf("stats %+v: a response with 128 KiB of headers was read", st)
	}
}
