package signals_test

import (
	"context"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

// pollCounter is a signals.PollMetrics: events by "issuer|event|result",
// polls by "issuer|result".
type pollCounter struct {
	counter
	polls counter
}

func (c *pollCounter) SignalPoll(issuer, result string) { c.polls.SignalEvent(issuer, "poll", result) }

func (c *pollCounter) SignalPollStopped(issuer string) {
	c.polls.SignalEvent(issuer, "poll", "stopped")
}

// TestPollerCountsItsPolls: a poller whose every poll failed (a
// transmitter that refuses an expired bearer, one unreachable) showed it in
// a log line only, and a SET it refused itself (listed under a name that
// is not its jti) nowhere: no metric said that the revocations of an issuer
// had stopped arriving. Each poll is now counted by result, and such a SET
// as an invalid event.
func TestPollerCountsItsPolls(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	a := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}}, map[string]any{"sub_id": issSubA, "jti": "A"}))
	for _, tc := range []struct {
		name        string
		fail        int // requests answered 503 first
		sets        map[string]string
		polls       int // polls to wait for: one more than those whose answers must have been read
		wantFailure int
		wantInvalid int // SETs refused by the poller itself
	}{
		{name: "transmitter-failing", fail: 1, sets: map[string]string{}, polls: 3, wantFailure: 1},
		{name: "misfiled-set", sets: map[string]string{"A": a, "B": a}, polls: 3, wantInvalid: 1},
		{name: "stored-set", sets: map[string]string{"A": a}, polls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.reset(t)
			tr, srv := newTransmitter(t, tc.sets)
			tr.fail = tc.fail
			m := &pollCounter{}
			p, err := signals.NewPoller(signals.PollOptions{Issuer: issuerA, URL: srv.URL, InsecureAllowHTTP: true, Interval: time.Second, MaxEvents: 1,
				Metrics: m,
				Receive: func(ctx context.Context, set string) error {
					_, _, err := e.r.Receive(ctx, issuerA, set, revoke.SourceSSFPoll, epoch)
					return err
				}})
			if err != nil {
				t.Fatal(err)
			}
			tr.waitPolls(t, tc.polls)
			p.Close()
			st := p.Stats()
			if got := m.polls.get(issuerA + "|poll|failure"); got != tc.wantFailure || uint64(got) != st.Failures {
				t.Errorf("polls counted failed = %d, want %d (Stats().Failures %d)", got, tc.wantFailure, st.Failures)
			}
			if got := m.polls.get(issuerA + "|poll|success"); got == 0 || uint64(got) != st.Polls {
				t.Errorf("polls counted successful = %d, want %d (Stats().Polls), at least 1", got, st.Polls)
			}
			if got := m.get(issuerA + "|unknown|invalid"); got != tc.wantInvalid {
				t.Errorf("SETs counted invalid by the poller = %d, want %d", got, tc.wantInvalid)
			}
		})
	}
}
