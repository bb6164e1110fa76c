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

// A transmitter that hands the same SETs back whatever the poll
// acknowledged or reported (its own store failing to drop them, a bug)
// brings nothing new after the first answer: each SET is a replay
// (acknowledged again) or refused again. The poller followed every answer
// with something to report at once, so it polled such a transmitter back
// to back — a request and a signature check per SET, as fast as the
// transmitter answered, for as long as it kept misbehaving. A poll whose
// SETs were none of them new waits the interval, as one that stored
// nothing does; its acknowledgements go with the next poll.
func TestPollerWaitsWhenTheTransmitterHandsBackTheSameSETs(t *testing.T) {
	set := "x." + base64.RawURLEncoding.EncodeToString([]byte(`{"jti":"a"}`)) + ".y"
	body := `{"sets":{"a":"` + set + `"},"moreAvailable":true}`
	tests := []struct {
		name    string
		receive func(n int) error // n: the SET's deliveries before this one
	}{
		{"acknowledged-then-replayed", func(n int) error {
			if n == 0 {
				return nil
			}
			return signals.ErrReplayed
		}},
		{"refused-again", func(int) error { return signals.ErrInvalidKey }},
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
						return tt.receive(n)
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
				if first > 2 {
					t.Errorf("%d polls within the first interval (at %v), want at most 2: a poll that brought nothing new waits the interval", first, at)
				}
				if len(at) < 3 {
					t.Errorf("%d polls in 3.5 intervals (at %v), want at least 3", len(at), at)
				}
			})
		})
	}
}
