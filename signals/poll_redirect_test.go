package signals_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/signals"
)

// TestPollerRedirectKeepsTheBearer: the poll URL is https; a redirect from
// the transmitter (a trailing-slash redirect behind a TLS-terminating load
// balancer answers Location: http://same-host/...) must not carry the
// stream's bearer token, or anything else, over plain HTTP. Go's client
// copies Authorization to a redirect whose host name is the same (or a
// subdomain), whatever its scheme and port.
func TestPollerRedirectKeepsTheBearer(t *testing.T) {
	const bearer = "poll-bearer-secret-0123456789"
	var mu sync.Mutex
	var leaked []string
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sets":{}}`))
	}))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/poll/", http.StatusTemporaryRedirect)
	}))
	defer tls.Close()
	if !strings.HasPrefix(tls.URL, "https://127.0.0.1:") || !strings.HasPrefix(plain.URL, "http://127.0.0.1:") {
		t.Fatalf("servers at %s and %s", tls.URL, plain.URL)
	}
	p, err := signals.NewPoller(signals.PollOptions{URL: tls.URL + "/poll", BearerToken: bearer, Interval: time.Second,
		Client: tls.Client(), Logger: slog.New(slog.DiscardHandler),
		Receive: func(context.Context, string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	polled := false
	for !polled && time.Now().Before(deadline) {
		st := p.Stats()
		polled = st.Polls+st.Failures > 0
		time.Sleep(10 * time.Millisecond)
	}
	p.Close()
	if !polled {
		t.Fatal("no poll within 5s: nothing was tested")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range leaked {
		if strings.Contains(l, bearer) {
			t.Fatalf("the poll's bearer token went over plain HTTP after a redirect: %q", l)
		}
	}
	if len(leaked) > 0 {
		t.Errorf("the poll followed a redirect from https to http: %q", leaked)
	}
}
