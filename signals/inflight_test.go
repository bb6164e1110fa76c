package signals_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

// gatedAdder is a revoke.Adder whose Add waits for its gate and then
// fails or stores, as the gate says: a replica's store call in flight.
type gatedAdder struct {
	entered chan struct{}
	gate    chan bool // true: store; false: fail
	next    adder
}

func (g *gatedAdder) Add(ctx context.Context, e revoke.Entry) (revoke.Entry, error) {
	g.entered <- struct{}{}
	if !<-g.gate {
		return revoke.Entry{}, fmt.Errorf("%w: test store down", revoke.ErrUnavailable)
	}
	return g.next.Add(ctx, e)
}

// otherReplica is a second receiver over e's verifier and replay store
// (the Redis jti store that replicas share), storing through store.
func otherReplica(t *testing.T, e *env, store revoke.Adder) *signals.Receiver {
	t.Helper()
	r, err := signals.New(signals.Options{
		Verifier: e.v,
		Issuers: []signals.Issuer{{Issuer: issuerA, Logout: &signals.Logout{Audiences: []string{clientID}, Revoke: e.mode},
			SSF: &signals.SSF{Audiences: []string{ssfAud}, PushBearer: bearerA}}},
		Replay: e.replay,
		Store:  store,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReplayWaitsForTheStore: while one replica has used a token's jti and
// not stored its entries yet, another replica's receipt of the same token
// is unavailable (503, not acknowledged), never replayed: the first may
// still fail and give the jti back, and then the retry must be taken.
// Once the entries are stored, the same token is replayed.
func TestReplayWaitsForTheStore(t *testing.T) {
	set := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}}, map[string]any{"sub_id": issSubA}))
	logout := mintA(map[string]any{"typ": "logout+jwt"}, logoutClaims(nil))
	for _, tt := range []struct {
		name    string
		receive func(r *signals.Receiver) error
	}{
		{"set", func(r *signals.Receiver) error {
			_, _, err := r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPoll, epoch)
			return err
		}},
		{"logout", func(r *signals.Receiver) error {
			_, err := r.Logout(context.Background(), logout, epoch)
			return err
		}},
	} {
		for _, stores := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/first-stores-%v", tt.name, stores), func(t *testing.T) {
				e := newEnv(t, signals.RevokeSession)
				gated := &gatedAdder{entered: make(chan struct{}), gate: make(chan bool)}
				first := otherReplica(t, e, gated)
				done := make(chan error, 1)
				go func() { done <- tt.receive(first) }()
				<-gated.entered // the first replica used the jti and is storing

				err := tt.receive(e.r)
				if !errors.Is(err, signals.ErrUnavailable) || errors.Is(err, signals.ErrInvalid) {
					t.Fatalf("a receipt while another replica stores = %v, want ErrUnavailable (not replayed, not invalid)", err)
				}
				gated.gate <- stores
				if err := <-done; (err == nil) != stores {
					t.Fatalf("the first replica = %v, want stored %v", err, stores)
				}

				err = tt.receive(e.r)
				switch {
				case stores && !errors.Is(err, signals.ErrReplayed):
					t.Errorf("a receipt after the other replica stored = %v, want ErrReplayed", err)
				case !stores && err != nil:
					t.Errorf("a receipt after the other replica failed and gave the jti back = %v, want it taken", err)
				case !stores && len(e.store.stored()) == 0:
					t.Error("the retry stored nothing")
				}
				if !stores {
					if err := tt.receive(e.r); !errors.Is(err, signals.ErrReplayed) {
						t.Errorf("a receipt after this replica stored = %v, want ErrReplayed", err)
					}
				}
			})
		}
	}
}

// TestPollerDefersASETStoredElsewhere: a polled SET whose jti another
// replica has used but not stored yet is neither acknowledged nor refused;
// once stored, it is acknowledged on the next poll.
func TestPollerDefersASETStoredElsewhere(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	set := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}}, map[string]any{"sub_id": issSubA}))
	gated := &gatedAdder{entered: make(chan struct{}), gate: make(chan bool)}
	first := otherReplica(t, e, gated)
	done := make(chan error, 1)
	go func() {
		_, _, err := first.Receive(context.Background(), issuerA, set, revoke.SourceSSFPush, epoch)
		done <- err
	}()
	<-gated.entered

	tr, srv := newTransmitter(t, map[string]string{"set-1": set})
	p := pollInto(t, e, srv.URL)
	defer p.Close()
	tr.waitPolls(t, 2) // the first answer, and the poll after the deferral
	reqs, pending := tr.snapshot()
	for i, r := range reqs {
		if slices.Contains(r.Ack, "set-1") || r.SetErrs["set-1"] != nil {
			t.Fatalf("poll %d acknowledged or refused set-1 while another replica stored it: %+v", i, r)
		}
	}
	if pending != 1 || p.Stats().Deferred == 0 {
		t.Fatalf("pending %d, stats %+v: want set-1 deferred", pending, p.Stats())
	}

	gated.gate <- true
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, pending := tr.snapshot(); pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("set-1 not acknowledged after the other replica stored it")
		}
		tr.waitPolls(t, 1)
	}
}

// The replay stores the service gives the receiver can tell a stored mark.
var (
	_ signals.Peeker = (*replay.Memory)(nil)
	_ signals.Peeker = (*replay.Redis)(nil)
)
