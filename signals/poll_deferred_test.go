package signals_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/signals"
)

// roundTrip is an http.RoundTripper of a function: a transmitter in the
// test's own bubble, without a socket.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A poll whose SETs could none be stored (the revocation store down) made
// no progress: polling again at once hands the same SETs back while
// whatever deferred them still fails. A transmitter with a backlog says
// moreAvailable, and the poller polled it back to back — a request, a
// signature check of every SET and a store attempt each, as fast as the
// transmitter answered, for as long as the store was down. So does a
// transmitter answering moreAvailable with no SET. Such a poll waits the
// interval, as a poll that found nothing does.
func TestPollerWaitsWhenNothingWasStored(t *testing.T) {
	set := "x." + base64.RawURLEncoding.EncodeToString([]byte(`{"jti":"a"}`)) + ".y"
	tests := []struct {
		name string
		body string
	}{
		{"deferred-with-more", `{"sets":{"a":"` + set + `"},"moreAvailable":true}`},
		{"empty-with-more", `{"sets":{},"moreAvailable":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const interval = 10 * time.Second
				at := pollsOver(t, interval, tt.body, func(int) error {
					return signals.ErrUnavailable // the revocation store is down
				})
				if first := pollsBefore(at, interval); first > 1 {
					t.Errorf("%d polls within the first interval (at %v), want 1: a poll that stored nothing waits the interval", first, at)
				}
				if len(at) < 3 {
					t.Errorf("%d polls in 3.5 intervals (at %v), want at least 3", len(at), at)
				}
			})
		})
	}
}

// pollsOver runs a Poller of interval for three and a half intervals (in
// the caller's synctest bubble) against a transmitter that answers body to
// every poll, its SETs handed to receive (n: the deliveries before this
// one), and returns when each poll came, from the start. From the 20th
// poll on the transmitter fails, so that a poller polling back to back
// waits and the bubble's clock moves on.
func pollsOver(t *testing.T, interval time.Duration, body string, receive func(n int) error) []time.Duration {
	t.Helper()
	start := time.Now()
	var mu sync.Mutex
	var at []time.Duration
	client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Since(start))
		if len(at) >= 20 {
			return nil, errors.New("enough")
		}
		return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})}
	var rmu sync.Mutex
	delivered := 0
	p, err := signals.NewPoller(signals.PollOptions{
		URL: "https://tx.example/poll", Interval: interval, Client: client,
		Logger: slog.New(slog.DiscardHandler),
		Receive: func(context.Context, string) error {
			rmu.Lock()
			defer rmu.Unlock()
			n := delivered
			delivered++
			return receive(n)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3*interval + interval/2)
	p.Close()
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(at)
}

// pollsBefore is how many of the polls at came before d.
func pollsBefore(at []time.Duration, d time.Duration) int {
	n := 0
	for _, a := range at {
		if a < d {
			n++
		}
	}
	return n
}
