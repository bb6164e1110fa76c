package signals_test

import (
	"encoding/base64"
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
				at := pollsOver(t, interval, body, tt.receive)
				if first := pollsBefore(at, interval); first > 2 {
					t.Errorf("%d polls within the first interval (at %v), want at most 2: a poll that brought nothing new waits the interval", first, at)
				}
				if len(at) < 3 {
					t.Errorf("%d polls in 3.5 intervals (at %v), want at least 3", len(at), at)
				}
			})
		})
	}
}
