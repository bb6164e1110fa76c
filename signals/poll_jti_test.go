package signals_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

// TestPollRefusesMisfiledSET: the poller acknowledged the poll response's
// member name, not the jti of the SET it stored: a response whose member
// "B" held another SET (here SET "A", already stored) got "B" acknowledged
// although no SET "B" was ever verified or stored. It is now a setErrs
// invalid_request.
func TestPollRefusesMisfiledSET(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	a := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}}, map[string]any{"sub_id": issSubA, "jti": "A"}))
	tr, srv := newTransmitter(t, map[string]string{"A": a, "B": a})
	p, err := signals.NewPoller(signals.PollOptions{Issuer: issuerA, URL: srv.URL, InsecureAllowHTTP: true, Interval: time.Second, MaxEvents: 1,
		Receive: func(ctx context.Context, set string) error {
			_, _, err := e.r.Receive(ctx, issuerA, set, revoke.SourceSSFPoll, epoch)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 4 {
		tr.waitPolls(t, 1)
	}
	reqs, pending := tr.snapshot()
	var acked []string
	for _, r := range reqs {
		acked = append(acked, r.Ack...)
	}
	t.Logf("acked %v, pending %d, stored %d", acked, pending, len(e.store.stored()))
	if slices.Contains(acked, "B") {
		t.Errorf("member B acknowledged; the SET under it carried jti A (stored entries: %d)", len(e.store.stored()))
	}
}
