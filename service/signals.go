package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
	"github.com/jwksverify/jwksverify/verify"
)

// signalState is what the revocation signals keep across generations: the
// replay store of their jtis (a used jti must stay used across a reload),
// the metrics recorder, and the pollers, which outlive a reload that does
// not change them.
type signalState struct {
	memory  *replay.Memory      // the jti store when neither DPoP nor Redis is configured
	redis   *replay.Redis       // the jti store over the service's Redis client
	client  *redisconn.Client   // redis's client
	metrics signals.PollMetrics // the receivers' events and the pollers' polls

	mu      sync.Mutex // guards pollers: a reload and Close may meet
	pollers []*poller
}

// poller is a running signals.Poller with the options it was built from.
type poller struct {
	opts signals.PollOptions
	p    *signals.Poller
}

// signalReceiver builds the signals.Receiver of plan over v (nil when no
// issuer has backchannel_logout or ssf), storing through store. Its jtis go
// to the DPoP replay store when it is on Redis, else to a store over the
// service's Redis client when redis is configured, else to a memory store
// of the service's own (never the DPoP memory store: see below): one store
// per process, so that a jti used once stays used.
func (s *Service) signalReceiver(plan *config.Plan, v *verify.Verifier, store revoke.Adder) (*signals.Receiver, error) {
	if plan.Signals == nil {
		return nil, nil
	}
	if store == nil {
		// The plan has a revocation section whenever it has signals
		// (config refuses signals without it), but the store is opened at
		// start only: Check opens none (the receiver is built to check its
		// options), and a reload that turns revocation on in a process
		// started without it gets none (restartNeeded names it). Such a
		// receiver stores nothing and says so.
		store = unopened{}
	}
	var rs signals.ReplayStore
	switch {
	case plan.DPoP != nil && plan.DPoP.ReplayStore == "redis" && s.replayClient != nil:
		// The DPoP store of this plan, over the client in use (a store
		// kept from a plan before, whose client a reload retired and
		// closes, is not).
		rs = s.replayStore
	case plan.Redis != nil:
		rc, err := s.redisClient(plan.Redis)
		if err != nil {
			return nil, err
		}
		if s.signals.redis == nil || s.signals.client != rc {
			r, err := replay.NewRedis(rc, replay.RedisOptions{})
			if err != nil {
				return nil, err
			}
			s.signals.redis, s.signals.client = r, rc
		}
		rs = s.signals.redis
	default:
		// Not the DPoP memory store: its purge walks the keys in the
		// order of their use and stops at the first not expired, so a
		// jti (24h) ahead of proofs (120s) would keep them counted against
		// replay_max_entries until it expires, and fill the store.
		if s.signals.memory == nil {
			m, err := replay.NewMemory(0)
			if err != nil {
				return nil, err
			}
			s.signals.memory = m
		}
		rs = s.signals.memory
	}
	return signals.New(signals.Options{
		Verifier: v, Issuers: plan.Signals.Issuers, Replay: rs, Store: store,
		JTITTL: signalJTITTL(plan), Metrics: s.signals.metrics, Logger: s.opts.Logger,
		RefusalLogRate: plan.Server.RejectionLogRate,
	})
}

// signalJTITTL is how long a logout token's or SET's jti is remembered:
// the revocation retention (an entry outlives every token it names; a
// replay within it would name the same entry), signals' default without.
func signalJTITTL(plan *config.Plan) time.Duration {
	if r := plan.Revocation; r != nil && r.Retention > 0 {
		return r.Retention
	}
	return signals.DefaultJTITTL
}

// syncPollers runs a poller for each of plan's ssf.poll settings: one
// already running with the same options is kept, the others are started,
// and those plan no longer has are closed. Each applies the SETs it polls
// through the current generation's receiver. It is called after a
// generation is swapped in, under s.reloading (or from New).
func (s *Service) syncPollers(plan *config.Plan) error {
	s.signals.mu.Lock()
	defer s.signals.mu.Unlock()
	var want []signals.PollOptions
	if plan.Signals != nil {
		want = plan.Signals.Polls
	}
	var kept, fresh []*poller
	taken := map[*poller]bool{}
	for _, o := range want {
		var found *poller
		for _, p := range s.signals.pollers {
			if !taken[p] && samePoll(p.opts, o) {
				found = p
				break
			}
		}
		if found == nil {
			opts := o
			opts.Logger, opts.Metrics = s.opts.Logger, s.signals.metrics
			opts.Receive = s.pollReceive(o.Issuer)
			p, err := signals.NewPoller(opts)
			if err != nil {
				for _, f := range fresh {
					f.p.Close()
					s.pollStopped(f.opts.Issuer, s.signals.pollers)
				}
				return err
			}
			found = &poller{opts: o, p: p}
			fresh = append(fresh, found)
		}
		taken[found] = true
		kept = append(kept, found)
	}
	for _, p := range s.signals.pollers {
		if !taken[p] {
			p.p.Close() // waits for its last poll to be counted
			s.pollStopped(p.opts.Issuer, kept)
		}
	}
	s.signals.pollers = kept
	return nil
}

// samePoll reports whether two plans' poll settings are the same (the
// runtime fields aside).
func samePoll(a, b signals.PollOptions) bool {
	return a.Issuer == b.Issuer && a.URL == b.URL && a.InsecureAllowHTTP == b.InsecureAllowHTTP &&
		a.BearerToken == b.BearerToken && a.Interval == b.Interval && a.MaxEvents == b.MaxEvents &&
		a.MaxResponseBytes == b.MaxResponseBytes && a.CAFile == b.CAFile
}

// pollReceive applies a polled SET of issuer through the receiver of the
// generation current when it arrives, as if pushed (source ssf_poll).
func (s *Service) pollReceive(issuer string) func(context.Context, string) error {
	return func(ctx context.Context, set string) error {
		srv := s.cur.Load().server
		r := srv.Signals()
		if r == nil {
			return fmt.Errorf("%w: the configuration has no receiver", signals.ErrUnavailable)
		}
		_, _, err := r.Receive(ctx, issuer, set, revoke.SourceSSFPoll, srv.Verifier().Now())
		return err
	}
}

// closePollers stops every poller and waits for them.
func (s *Service) closePollers() {
	s.signals.mu.Lock()
	defer s.signals.mu.Unlock()
	for _, p := range s.signals.pollers {
		p.p.Close()
		s.pollStopped(p.opts.Issuer, nil)
	}
	s.signals.pollers = nil
}

// pollStopped tells the metrics that issuer's stream is no longer polled
// (its poller was closed), unless one of running polls it: a stream no
// longer polled must not keep JWKSVerifySETPollFailing firing with the
// result of its last poll. Called under s.signals.mu, after the Close.
func (s *Service) pollStopped(issuer string, running []*poller) {
	if s.signals.metrics == nil {
		return
	}
	for _, p := range running {
		if p.opts.Issuer == issuer {
			return
		}
	}
	s.signals.metrics.SignalPollStopped(issuer)
}

// unopened is the revocation store of a check, or of a reload that turned
// revocation on: it was not opened.
type unopened struct{}

// errUnopened is why an unopened store takes no entry. Only a reload that
// turned revocation on serves signals over one (a check receives none).
var errUnopened = fmt.Errorf("%w: not opened: this process started without revocation, and turning it on takes a restart", revoke.ErrUnavailable)

func (unopened) Add(context.Context, revoke.Entry) (revoke.Entry, error) {
	return revoke.Entry{}, errUnopened
}
