package service

import (
	"fmt"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// generation is a plan at work: its fetchers (some inherited from the
// generation before), introspection clients, token cache, verifier and
// server.
type generation struct {
	plan     *config.Plan
	fetchers []fetcher // one per plan issuer, in order
	// clients are the issuers' introspection clients. A client whose
	// issuer keeps its fetcher and whose introspection settings did not
	// change is the previous generation's, answer cache and all (no
	// upstream call again for a cached token, stale answers kept through an
	// outage); intro says which settings each was built from.
	clients []*introspect.Client
	intro   []introClient
	server  *server.Server
	cache   *verify.TokenCache // shared with the generations before when its bounds are the same; nil: off
	// minter mints the plan's tokens for upstreams (nil: none), built from
	// mintOpts; shared with the generation before when they are the same.
	minter   *mint.Minter
	mintOpts mint.Options
	// dpop is the server's DPoP checker, else that of the last generation
	// that had one: the next checker replaces it (dpop.Options.Replaces),
	// so that a reload through a plan without dpop does not forget the
	// shorter max_age of the replay entries still in the store.
	dpop *dpop.Checker
}

// fetcher is a running fetcher with the options it was built from, so that
// a reload can tell whether an issuer's key source changed (jwks.Same).
type fetcher struct {
	opts jwks.Options
	f    *jwks.Fetcher
}

// introClient is a running introspection client with the plan's options
// it was built from (before Logger and Endpoint are set) and the fetcher
// its discovered endpoint comes from.
type introClient struct {
	opts introspect.Options
	f    *jwks.Fetcher
	c    *introspect.Client
}

// builder makes one generation of a plan for s. Each issuer whose key
// source is the same as one of prev's (jwks.Same) keeps prev's fetcher:
// its keys, its schedule and its counters, no refetch; the others get a
// new fetcher, kept in fresh. Likewise an issuer that keeps its fetcher
// and its introspection settings (introspect.Same) keeps prev's client.
//
// A check builder (Check) starts nothing: no fetcher (each issuer's options
// are checked and its keys left empty), a replay store of its own run; it
// collects the issuers' problems instead of stopping at the first.
type builder struct {
	s     *Service
	prev  *generation // nil: the first generation
	check bool

	fresh        []*jwks.Fetcher      // fetchers started for this generation
	freshClients []*introspect.Client // likewise clients
	freshMinter  *mint.Minter         // likewise the minter
	problems     []error              // a check builder's issuer problems

	// saved is what the service kept across generations before the build
	// (the replay stores, the Redis client): a build that is not used
	// puts it back.
	saved shared
}

// shared is the state of a Service that outlives generations and that a
// build may change: the DPoP replay store, the Redis client, the signal
// jtis' stores.
type shared struct {
	replayPlan   *config.DPoP
	replayStore  dpop.ReplayStore
	replayClient *redisconn.Client
	redis        *redisconn.Client
	redisOpts    redisconn.Options
	redisN       int // len(redisAll): the clients started after are the build's
	signalMemory *replay.Memory
	signalRedis  *replay.Redis
	signalClient *redisconn.Client
}

func (s *Service) shared() shared {
	return shared{
		replayPlan: s.replayPlan, replayStore: s.replayStore, replayClient: s.replayClient,
		redis: s.redis, redisOpts: s.redisOpts, redisN: len(s.redisAll),
		signalMemory: s.signals.memory, signalRedis: s.signals.redis, signalClient: s.signals.client,
	}
}

// restore puts back the shared state of sh and closes the Redis clients
// started since (no generation in use has them).
func (s *Service) restore(sh shared) {
	s.closeRedis(s.redisAll[sh.redisN:])
	s.redisAll = s.redisAll[:sh.redisN]
	s.replayPlan, s.replayStore, s.replayClient = sh.replayPlan, sh.replayStore, sh.replayClient
	s.redis, s.redisOpts = sh.redis, sh.redisOpts
	s.signals.memory, s.signals.redis, s.signals.client = sh.signalMemory, sh.signalRedis, sh.signalClient
}

// commitReplayBound applies the replay bound of the plan swapped in to a
// memory store kept across the reload (dpopChecker only records it, so
// that a build that is not used leaves the running store's bound alone).
func (s *Service) commitReplayBound() {
	if m, ok := s.replayStore.(*replay.Memory); ok && s.replayPlan != nil {
		if err := m.SetMax(s.replayPlan.MemoryMaxEntries); err != nil {
			s.opts.Logger.Error("reload: the DPoP replay store's bound", "err", err)
		}
	}
}

// undo closes what the builder started and puts back the service's shared
// state: the generation was not used.
func (b *builder) undo() {
	b.s.closeFetchers(b.fresh)
	closeClients(b.freshClients)
	if b.freshMinter != nil {
		_ = b.freshMinter.Close()
	}
	b.fresh, b.freshClients, b.freshMinter = nil, nil, nil
	b.s.restore(b.saved)
}

// build makes the generation of plan. On error what it started is closed.
func (b *builder) build(plan *config.Plan) (*generation, error) {
	b.saved = b.s.shared()
	g, err := b.assemble(plan)
	if err != nil {
		b.undo()
		return nil, err
	}
	return g, nil
}

// assemble builds the parts of plan's generation in dependency order:
// the Redis client, the token cache, then per issuer its fetcher and
// client, then the verifier over them, then the server over the verifier.
func (b *builder) assemble(plan *config.Plan) (*generation, error) {
	g := &generation{plan: plan}
	// The one Redis client of the plan (redisconn.New connects nothing):
	// what uses it below takes it from the service.
	if _, err := b.s.redisClient(plan.Redis); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	vo := plan.Verify
	vo.Logger, vo.Tracer = b.s.opts.Logger, b.s.opts.Tracer
	if o := plan.Verify.TokenCache; o.MaxEntries > 0 {
		if p := b.prev; p != nil && p.cache != nil && p.plan.Verify.TokenCache == o {
			g.cache = p.cache
		} else {
			c, err := verify.NewTokenCache(o)
			if err != nil {
				return nil, err
			}
			g.cache = c
		}
		vo.Cache = g.cache
	}
	taken := make(map[*jwks.Fetcher]bool)
	takenClient := make(map[*introspect.Client]bool)
	for i, is := range plan.Issuers {
		vi, err := b.issuer(g, is, taken, takenClient)
		if err != nil {
			err = fmt.Errorf("issuers[%d] (%s): %w", i, is.JWKS.Issuer, err)
			if !b.check {
				return nil, err
			}
			b.problems = append(b.problems, err)
		}
		vo.Issuers = append(vo.Issuers, vi)
	}
	if b.prev != nil {
		vo.Previous = b.prev.server.Verifier()
	}
	v, err := verify.New(vo)
	if err != nil {
		return nil, err
	}
	if g.minter, err = b.minter(plan); err != nil {
		return nil, err
	}
	if plan.Mint != nil {
		g.mintOpts = *plan.Mint
		g.mintOpts.Logger = b.s.opts.Logger
		if b.check {
			g.mintOpts.Watch = 0
		}
	}
	var replaced *dpop.Checker
	if b.prev != nil {
		replaced = b.prev.dpop
	}
	if g.server, err = b.s.newServer(plan, v, g.minter, replaced); err != nil {
		return nil, err
	}
	if g.dpop = g.server.DPoP(); g.dpop == nil {
		g.dpop = replaced
	}
	return g, nil
}

// issuer returns the verifier's issuer of is over its fetcher and client
// (prev's when the same, else new ones), and adds them to g.
func (b *builder) issuer(g *generation, is config.Issuer, taken map[*jwks.Fetcher]bool, takenClient map[*introspect.Client]bool) (verify.Issuer, error) {
	is.JWKS.Logger, is.JWKS.Tracer = b.s.opts.Logger, b.s.opts.Tracer
	var f *jwks.Fetcher // nil for a check
	if b.check {
		is.Verify.Keys = &cache.Keys{}
		if err := checkSource(is.JWKS); err != nil {
			return is.Verify, err
		}
	} else {
		var err error
		if f, err = b.fetcher(is.JWKS, taken); err != nil {
			return is.Verify, err
		}
		g.fetchers = append(g.fetchers, fetcher{opts: is.JWKS, f: f})
		is.Verify.Keys, is.Verify.Refresher = f.Keys(), f
	}
	if is.Introspection != nil {
		o := *is.Introspection
		if o.SharedCache {
			// The answers are in Redis: the service's one client.
			var err error
			if o.Redis, err = b.s.redisClient(g.plan.Redis); err != nil {
				return is.Verify, fmt.Errorf("introspection: %w", err)
			}
		}
		c, err := b.client(o, f, takenClient)
		if err != nil {
			return is.Verify, fmt.Errorf("introspection: %w", err)
		}
		g.clients = append(g.clients, c)
		g.intro = append(g.intro, introClient{opts: o, f: f, c: c})
		is.Verify.Introspector = c
	}
	return is.Verify, nil
}

// checkSource checks an issuer's key source as jwks.New would take it,
// without starting it: its options, and the ca_file it reads at start.
func checkSource(o jwks.Options) error {
	o.StateDir = "" // Check looks at state_dir once, for every issuer
	if err := jwks.CheckOptions(o); err != nil {
		return err
	}
	if _, err := jwks.TLSConfig(o.CAFile); err != nil {
		return fmt.Errorf("ca_file: %w", err)
	}
	return nil
}

// fetcher returns prev's fetcher of the same source not yet taken, or a
// new one.
func (b *builder) fetcher(o jwks.Options, taken map[*jwks.Fetcher]bool) (*jwks.Fetcher, error) {
	if b.prev != nil {
		for _, pf := range b.prev.fetchers {
			if !taken[pf.f] && jwks.Same(pf.opts, o) {
				taken[pf.f] = true
				return pf.f, nil
			}
		}
		// A changed issuer starts from the last good keys of its source,
		// not from nothing (the IdP may be down now); jwks decides whether
		// the source is the same.
		for _, pf := range b.prev.fetchers {
			if pf.opts.Issuer == o.Issuer {
				o.Previous = pf.f
				break
			}
		}
	}
	f, err := jwks.New(o)
	if err != nil {
		return nil, err
	}
	b.fresh = append(b.fresh, f)
	taken[f] = true
	return f, nil
}

// client returns prev's introspection client of the same settings over the
// same fetcher f (nil for a check) not yet taken, or a new one.
func (b *builder) client(o introspect.Options, f *jwks.Fetcher, taken map[*introspect.Client]bool) (*introspect.Client, error) {
	if b.prev != nil {
		for _, pc := range b.prev.intro {
			if !taken[pc.c] && pc.f == f && introspect.Same(pc.opts, o) {
				taken[pc.c] = true
				return pc.c, nil
			}
		}
	}
	o.Logger, o.Tracer = b.s.opts.Logger, b.s.opts.Tracer
	switch {
	case o.URL != "":
	case f == nil: // a check: no fetcher discovers the endpoint
		o.Endpoint = func() string { return "" }
	default:
		o.Endpoint = f.IntrospectionEndpoint
	}
	c, err := introspect.New(o)
	if err != nil {
		return nil, err
	}
	b.freshClients = append(b.freshClients, c)
	taken[c] = true
	return c, nil
}

// newServer builds plan's server over v and the minter m (nil: none), with
// the service's metrics (nil before they exist) and tracer; its DPoP
// checker replaces replaced, the running generation's (nil: none).
func (s *Service) newServer(plan *config.Plan, v *verify.Verifier, m *mint.Minter, replaced *dpop.Checker) (*server.Server, error) {
	so := plan.Server
	so.Verifier, so.Logger, so.Version, so.ConfigHash = v, s.opts.Logger, s.opts.Version, plan.Hash
	if s.revocations != nil {
		so.Revocations = s.revocations.store
	}
	so.Minter = m
	if s.metrics != nil {
		so.Metrics, so.MetricsHandler = s.metrics, s.metrics.Handler()
	}
	if s.opts.Tracer != nil {
		so.Tracer, so.Propagator = s.opts.Tracer, s.opts.Propagator
	}
	var err error
	if so.DPoP, err = s.dpopChecker(plan.DPoP, plan.Redis, replaced); err != nil {
		return nil, err
	}
	var store revoke.Adder
	if so.Revocations != nil {
		store = so.Revocations
	}
	if so.Signals, err = s.signalReceiver(plan, v, store); err != nil {
		return nil, err
	}
	return server.New(so)
}

// redisClient returns the service's Redis client for plan p (nil: none),
// starting one when there is none or p asks for another (redisconn.Same).
// The client outlives generations; one that a reload replaced is retired
// (replacedRedis).
func (s *Service) redisClient(p *redisconn.Options) (*redisconn.Client, error) {
	if p == nil {
		return nil, nil
	}
	if s.redis != nil && redisconn.Same(s.redisOpts, *p) {
		return s.redis, nil
	}
	c, err := redisconn.New(*p)
	if err != nil {
		return nil, err
	}
	s.redisAll = append(s.redisAll, c)
	s.redis, s.redisOpts = c, *p
	return c, nil
}

// dpopChecker builds the DPoP checker of plan p (nil: none) over the
// service's replay store, which it starts when there is none or p asks for
// another one: another store, bound or Redis client. It replaces replaced
// (dpop.Options.Replaces): a raised max_age does not outlast the replay
// entries stored under the shorter one, and over another store the checker
// asks replaced's about the proofs of its time (Reload retires replaced and
// holds its Redis client: holdReplay).
func (s *Service) dpopChecker(p *config.DPoP, redisOpts *redisconn.Options, replaced *dpop.Checker) (*dpop.Checker, error) {
	if p == nil {
		return nil, nil
	}
	if _, ok := s.replayStore.(*replay.Memory); ok && p.ReplayStore != "redis" && s.replayPlan.MemoryMaxEntries != p.MemoryMaxEntries {
		// Only the memory store's bound changed: it is changed in place
		// once the generation is swapped in (commitReplayBound), so that
		// the proofs already used are not forgotten (a new store would
		// accept each of them once more within max_age).
		if err := replay.CheckMaxEntries(p.MemoryMaxEntries); err != nil {
			return nil, err
		}
		s.replayPlan = p
	}
	var rc *redisconn.Client
	if p.ReplayStore == "redis" {
		var err error
		if rc, err = s.redisClient(redisOpts); err != nil {
			return nil, err
		}
	}
	if s.replayStore == nil || s.replayPlan.ReplayStore != p.ReplayStore ||
		s.replayPlan.MemoryMaxEntries != p.MemoryMaxEntries || rc != s.replayClient {
		switch p.ReplayStore {
		case "redis":
			r, err := replay.NewRedis(rc, replay.RedisOptions{})
			if err != nil {
				return nil, err
			}
			s.replayStore, s.replayClient = r, rc
		default:
			m, err := replay.NewMemory(p.MemoryMaxEntries)
			if err != nil {
				return nil, err
			}
			s.replayStore, s.replayClient = m, nil
		}
		s.replayPlan = p
	}
	opts := p.Checker
	opts.Replay, opts.Replaces = s.replayStore, replaced
	return dpop.New(opts)
}

// closeClients closes introspection clients and waits for their calls.
func closeClients(cs []*introspect.Client) {
	for _, c := range cs {
		c.Close()
	}
}
