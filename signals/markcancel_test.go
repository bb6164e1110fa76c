package signals_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

// ctxReplay is a memory replay store that, like go-redis, fails a call whose
// context is done.
type ctxReplay struct{ m *replay.Memory }

func (c ctxReplay) Use(ctx context.Context, k [32]byte, ttl time.Duration, now time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return c.m.Use(ctx, k, ttl, now)
}
func (c ctxReplay) Release(ctx context.Context, k [32]byte) error { return c.m.Release(ctx, k) }
func (c ctxReplay) Used(ctx context.Context, k [32]byte, now time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return c.m.Used(ctx, k, now)
}

// cancelAfterAdd stores, then cancels the receipt's context: the poller
// closed by a reload, or the pushing transmitter's client giving up, just
// after the entries were stored.
type cancelAfterAdd struct {
	next   *adder
	cancel context.CancelFunc
}

func (c cancelAfterAdd) Add(ctx context.Context, e revoke.Entry) (revoke.Entry, error) {
	got, err := c.next.Add(ctx, e)
	c.cancel()
	return got, err
}

// TestMarkOutlivesTheReceiptsContext: a SET whose entries are stored is
// marked stored even when the receipt's context ends right after the store,
// so that its redelivery is acknowledged (replayed), not deferred until the
// jti expires.
func TestMarkOutlivesTheReceiptsContext(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	set := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}}, map[string]any{"sub_id": issSubA}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := signals.New(signals.Options{
		Verifier: e.v,
		Issuers:  []signals.Issuer{{Issuer: issuerA, SSF: &signals.SSF{Audiences: []string{ssfAud}, PushBearer: bearerA}}},
		Replay:   ctxReplay{e.replay},
		Store:    cancelAfterAdd{e.store, cancel},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Receive(ctx, issuerA, set, revoke.SourceSSFPoll, epoch); err != nil {
		t.Fatalf("first receipt = %v, want stored", err)
	}
	if len(e.store.stored()) == 0 {
		t.Fatal("nothing stored")
	}
	_, _, err = e.r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPoll, epoch.Add(time.Minute))
	if !errors.Is(err, signals.ErrReplayed) {
		t.Errorf("redelivery of a stored SET = %v, want ErrReplayed (acknowledged), not deferred until its jti expires", err)
	}
}

// appliedThenFailed is a memory replay store whose first Use is applied and
// answered with an error: Redis's set-if-absent applied, then WAIT short of
// acknowledge_replicas, or the reply lost to the client's timeout.
type appliedThenFailed struct {
	ctxReplay
	failed bool
}

func (a *appliedThenFailed) Use(ctx context.Context, k [32]byte, ttl time.Duration, now time.Time) (bool, error) {
	fresh, err := a.ctxReplay.Use(ctx, k, ttl, now)
	if !a.failed && err == nil && fresh {
		a.failed = true
		return false, errors.New("WAIT: 0 of 1 replicas acknowledged")
	}
	return fresh, err
}

// TestUseErrorGivesTheJTIBack: a jti whose Use failed after it may have
// been applied is given back, so that the sender's retry is taken (not
// answered 503 until the jti expires).
func TestUseErrorGivesTheJTIBack(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	set := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}}, map[string]any{"sub_id": issSubA}))
	r, err := signals.New(signals.Options{
		Verifier: e.v,
		Issuers:  []signals.Issuer{{Issuer: issuerA, SSF: &signals.SSF{Audiences: []string{ssfAud}, PushBearer: bearerA}}},
		Replay:   &appliedThenFailed{ctxReplay: ctxReplay{e.replay}},
		Store:    e.store,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPoll, epoch); !errors.Is(err, signals.ErrUnavailable) {
		t.Fatalf("receipt with the replay store failing = %v, want ErrUnavailable", err)
	}
	if _, _, err := r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPoll, epoch.Add(time.Second)); err != nil {
		t.Errorf("retry after the replay store recovered = %v, want taken", err)
	}
}
