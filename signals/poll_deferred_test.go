package signals_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
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
				start := time.Now()
				var mu sync.Mutex
				var at []time.Duration
				client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
					mu.Lock()
					defer mu.Unlock()
					at = append(at, time.Since(start))
					if len(at) >= 20 {
						// Enough to tell: fail the poll, so that the poller waits
						// and the bubble's clock can move on.
						return nil, errors.New("enough")
					}
					return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{},
						Body: io.NopCloser(strings.NewReader(tt.body)), Request: r}, nil
				})}
				p, err := signals.NewPoller(signals.PollOptions{
					URL: "https://tx.example/poll", Interval: interval, Client: client,
					Logger: slog.New(slog.DiscardHandler),
					Receive: func(context.Context, string) error {
						return signals.ErrUnavailable // the revocation store is down
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(3*interval + interval/2)
				p.Close()
				mu.Lock()
				defer mu.Unlock()
				first := 0
				for _, d := range at {
					if d < interval {
						first++
					}
				}
				if first > 1 {
					t.Errorf("%d polls within the first interval (at %v), want 1: a poll that stored nothing waits the interval", first, at)
				}
				if len(at) < 3 {
					t.Errorf("%d polls in 3.5 intervals (at %v), want at least 3", len(at), at)
				}
			})
		})
	}
}
