package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/buildinfo"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/extauthz"
	"github.com/jwksverify/jwksverify/server/metrics"
	"github.com/jwksverify/jwksverify/verify"
)

const (
	// configPollInterval is how often the configuration file is checked
	// for a change of its content. Writes within one interval are one
	// change (the debounce); a file replaced by rename (a Kubernetes
	// ConfigMap) is seen like one written in place.
	configPollInterval = time.Second
	// newIssuerWait bounds how long a reload waits for the first keys of
	// the issuers it adds before it swaps anyway (they are then not ready
	// until their keys come, as at start).
	newIssuerWait = 10 * time.Second
)

// live is the service at work across reloads: the current generation (a
// plan's verifier and server, over fetchers shared with the generations
// before it), swapped atomically, and what outlives every generation: the
// metrics, the token cache, the gRPC services, the tracer.
type live struct {
	cur     atomic.Pointer[service]
	logger  *slog.Logger
	tracing *tracing
	metrics *metrics.Metrics
	grpc    *extauthz.Service

	mu       sync.Mutex // serializes reloads and the drain
	draining bool

	// wait is the wait budget of the first plan, from which the HTTP
	// server's timeouts were derived for the life of the process
	// (config.Timeouts.Wait): no request waits longer, whatever a reload
	// says.
	wait time.Duration

	retired sync.WaitGroup // goroutines closing the fetchers of replaced generations
	stop    chan struct{}  // closed by close: retired fetchers close at once

	// The DPoP replay store outlives generations, as the token cache does:
	// a reload must not forget the proofs already used. A reload that
	// changes the store's settings starts a new one; the Redis client in
	// use (redis) is closed by close, replaced ones are retired.
	replayPlan  *config.DPoP
	replayStore dpop.ReplayStore
	redis       []*replay.Redis
}

// service is a plan at work: its fetchers (some inherited from the
// generation before), the verifier and the server.
type service struct {
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
}

// introClient is a running introspection client with the plan's options
// it was built from (before cmd sets Logger and Endpoint) and the fetcher
// its discovered endpoint comes from.
type introClient struct {
	opts introspect.Options
	f    *jwks.Fetcher
	c    *introspect.Client
}

// sameIntrospection reports whether the running client a may answer for
// the plan's options b over fetcher fb: the same fetcher (its discovered
// endpoint), and every option equal.
func sameIntrospection(a introClient, b introspect.Options, fb *jwks.Fetcher) bool {
	return a.f == fb && a.opts.Endpoint == nil && b.Endpoint == nil && a.opts.Logger == nil && b.Logger == nil &&
		reflect.DeepEqual(a.opts, b)
}

// fetcher is a running fetcher with the options it was built from, so that
// a reload can tell whether an issuer's key source changed.
type fetcher struct {
	opts jwks.Options
	f    *jwks.Fetcher
}

// newLive builds the first generation of plan.
func newLive(plan *config.Plan, logger *slog.Logger, tr *tracing) (*live, error) {
	l := &live{logger: logger, tracing: tr, stop: make(chan struct{}), wait: plan.HTTP.Wait}
	s, fresh, _, err := l.build(plan, nil)
	if err != nil {
		return nil, err
	}
	bi := buildinfo.Read()
	m, err := metrics.New(metrics.Options{Verifier: s.server.Verifier(), Version: bi.Version, Revision: bi.Revision, Policies: plan.Server.Policies})
	if err != nil {
		closeFetchers(fresh, logger)
		closeClients(s.clients)
		return nil, err
	}
	l.metrics = m
	// The server is built again now that the metrics exist: they count
	// every generation's decisions.
	if s.server, err = l.newServer(plan, s.server.Verifier()); err != nil {
		closeFetchers(fresh, logger)
		closeClients(s.clients)
		return nil, err
	}
	if plan.Hash != "" {
		m.SetConfigHash(plan.Hash)
	}
	l.grpc = extauthz.New(s.server)
	l.cur.Store(s)
	return l, nil
}

// build makes a generation of plan. Each issuer whose key source is the
// same as one of prev's (jwks.Same) keeps prev's fetcher: its keys, its
// schedule and its counters, no refetch; the others get a new fetcher,
// returned in fresh (on error they are closed and nothing else changed).
// Likewise an issuer that keeps its fetcher and its introspection settings
// keeps prev's introspection client; the new clients are returned in
// freshClients.
func (l *live) build(plan *config.Plan, prev *service) (s *service, fresh []*jwks.Fetcher, freshClients []*introspect.Client, err error) {
	gen := &service{plan: plan}
	s = gen
	var made []*jwks.Fetcher             // fresh, which the error returns set to nil
	var madeClients []*introspect.Client // likewise freshClients
	defer func() {
		if err != nil {
			// The returns set s and fresh to nil: close what was built.
			closeFetchers(made, l.logger)
			closeClients(madeClients)
			s, fresh, freshClients = nil, nil, nil
		}
	}()
	vo := plan.Verify
	vo.Logger, vo.Tracer = l.logger, l.tracing.tracer
	if o := plan.Verify.TokenCache; o.MaxEntries > 0 {
		if prev != nil && prev.cache != nil && prev.plan.Verify.TokenCache == o {
			s.cache = prev.cache
		} else if s.cache, err = verify.NewTokenCache(o); err != nil {
			return nil, nil, nil, err
		}
		vo.Cache = s.cache
	}
	taken := make(map[*jwks.Fetcher]bool)
	takenClient := make(map[*introspect.Client]bool)
	for i, is := range plan.Issuers {
		is.JWKS.Logger, is.JWKS.Tracer = l.logger, l.tracing.tracer
		var f *jwks.Fetcher
		if prev != nil {
			for _, pf := range prev.fetchers {
				if !taken[pf.f] && jwks.Same(pf.opts, is.JWKS) {
					f = pf.f
					break
				}
			}
		}
		if f == nil {
			o := is.JWKS
			if prev != nil {
				// A changed issuer starts from the last good keys of its
				// source, not from nothing (the IdP may be down now); jwks
				// decides whether the source is the same.
				for _, pf := range prev.fetchers {
					if pf.opts.Issuer == o.Issuer {
						o.Previous = pf.f
						break
					}
				}
			}
			if f, err = jwks.New(o); err != nil {
				return nil, nil, nil, fmt.Errorf("issuers[%d] (%s): %w", i, is.JWKS.Issuer, err)
			}
			fresh = append(fresh, f)
			made = fresh
		}
		taken[f] = true
		s.fetchers = append(s.fetchers, fetcher{opts: is.JWKS, f: f})
		is.Verify.Keys, is.Verify.Refresher = f.Keys(), f
		if is.Introspection != nil {
			var c *introspect.Client
			if prev != nil {
				for _, pc := range prev.intro {
					if !takenClient[pc.c] && sameIntrospection(pc, *is.Introspection, f) {
						c = pc.c
						break
					}
				}
			}
			if c == nil {
				o := *is.Introspection
				o.Logger = l.logger
				if o.URL == "" {
					o.Endpoint = f.IntrospectionEndpoint
				}
				if c, err = introspect.New(o); err != nil {
					return nil, nil, nil, fmt.Errorf("issuers[%d] (%s): introspection: %w", i, is.JWKS.Issuer, err)
				}
				freshClients = append(freshClients, c)
				madeClients = freshClients
			}
			takenClient[c] = true
			s.clients = append(s.clients, c)
			s.intro = append(s.intro, introClient{opts: *is.Introspection, f: f, c: c})
			is.Verify.Introspector = c
		}
		vo.Issuers = append(vo.Issuers, is.Verify)
	}
	if prev != nil {
		vo.Previous = prev.server.Verifier()
	}
	v, err := verify.New(vo)
	if err != nil {
		return nil, nil, nil, err
	}
	if s.server, err = l.newServer(plan, v); err != nil {
		return nil, nil, nil, err
	}
	return s, fresh, freshClients, nil
}

// newServer builds plan's server over v, with the process's metrics (nil
// before they exist) and tracer.
func (l *live) newServer(plan *config.Plan, v *verify.Verifier) (*server.Server, error) {
	so := plan.Server
	so.Verifier, so.Logger, so.Version, so.ConfigHash = v, l.logger, buildinfo.Read().Version, plan.Hash
	if l.metrics != nil {
		so.Metrics, so.MetricsHandler = l.metrics, l.metrics.Handler()
	}
	if l.tracing.tracer != nil {
		so.Tracer, so.Propagator = l.tracing.tracer, l.tracing.propagator()
	}
	var err error
	if so.DPoP, err = l.dpopChecker(plan.DPoP); err != nil {
		return nil, err
	}
	return server.New(so)
}

// dpopChecker builds the DPoP checker of plan p (nil: none) over the
// process's replay store, which it starts when there is none or p asks for
// another one.
func (l *live) dpopChecker(p *config.DPoP) (*dpop.Checker, error) {
	if p == nil {
		return nil, nil
	}
	if m, ok := l.replayStore.(*replay.Memory); ok && p.ReplayStore != "redis" && l.replayPlan.MemoryMaxEntries != p.MemoryMaxEntries {
		// Only the memory store's bound changed: change it in place, so
		// that the proofs already used are not forgotten (a new store would
		// accept each of them once more within max_age).
		if err := m.SetMax(p.MemoryMaxEntries); err != nil {
			return nil, err
		}
		l.replayPlan = p
	}
	if l.replayStore == nil || l.replayPlan.ReplayStore != p.ReplayStore ||
		l.replayPlan.MemoryMaxEntries != p.MemoryMaxEntries || l.replayPlan.Redis != p.Redis {
		switch p.ReplayStore {
		case "redis":
			r, err := replay.NewRedis(p.Redis)
			if err != nil {
				return nil, err
			}
			l.redis = append(l.redis, r)
			l.replayStore = r
		default:
			m, err := replay.NewMemory(p.MemoryMaxEntries)
			if err != nil {
				return nil, err
			}
			l.replayStore = m
		}
		l.replayPlan = p
	}
	opts := p.Checker
	opts.Replay = l.replayStore
	return dpop.New(opts)
}

// reload loads plan's successor next: valid, it is swapped in atomically
// (requests in flight finish under the old generation; the fetchers of
// issuers it removed or changed close once those requests are done, and
// their cached verdicts go); invalid, the old one keeps serving. Either way
// the outcome is logged and counted. It waits for the first keys of added
// issuers (at most newIssuerWait, and ctx), so that a reload does not turn
// the instance unready for an issuer whose keys are on their way.
func (l *live) reload(ctx context.Context, next *config.Plan, loadErr error) {
	fail := func(err error) {
		l.metrics.Reloaded(metrics.ReloadFailure)
		l.logger.Error("configuration reload failed; the previous configuration keeps serving", "err", err)
	}
	if loadErr != nil {
		fail(loadErr)
		return
	}
	prev := l.cur.Load()
	s, fresh, freshClients, err := l.build(next, prev)
	if err != nil {
		fail(err)
		return
	}
	if len(fresh) > 0 {
		wctx, cancel := context.WithTimeout(ctx, newIssuerWait)
		for _, f := range fresh {
			if f.Ready(wctx) != nil {
				l.logger.Warn("reload: an added or changed issuer has no keys yet; it is not ready until they come", "issuer", f.Keys().Status().Source)
				break
			}
		}
		cancel()
	}
	l.mu.Lock()
	if l.draining {
		l.mu.Unlock()
		closeFetchers(fresh, l.logger)
		closeClients(freshClients)
		return
	}
	l.cur.Store(s)
	l.grpc.Swap(s.server)
	l.metrics.Use(s.server.Verifier())
	if s.cache != nil {
		s.cache.Keep(s.server.Verifier()) // the verdicts of removed and changed issuers go
	}
	l.metrics.SetConfigHash(next.Hash)
	l.mu.Unlock()
	l.metrics.Reloaded(metrics.ReloadSuccess)

	kept := make(map[*jwks.Fetcher]bool, len(s.fetchers))
	for _, f := range s.fetchers {
		kept[f.f] = true
	}
	var old []*jwks.Fetcher
	for _, f := range prev.fetchers {
		if !kept[f.f] {
			old = append(old, f.f)
		}
	}
	keptClients := make(map[*introspect.Client]bool, len(s.clients))
	for _, c := range s.clients {
		keptClients[c] = true
	}
	var oldClients []*introspect.Client
	for _, c := range prev.clients {
		if !keptClients[c] {
			oldClients = append(oldClients, c)
		}
	}
	// The Redis replay stores of replaced settings go too; the one in use
	// stays (also when this plan has no DPoP: a later one may use it again).
	inUse, _ := l.replayStore.(*replay.Redis)
	var oldRedis, keptRedis []*replay.Redis
	for _, r := range l.redis {
		if r == inUse {
			keptRedis = append(keptRedis, r)
		} else {
			oldRedis = append(oldRedis, r)
		}
	}
	l.redis = keptRedis
	l.retire(old, oldClients, oldRedis, prev.plan.HTTP.Write)
	l.logger.Info("configuration reloaded", "hash", next.Hash, "issuers", len(next.Issuers),
		"new_fetchers", len(fresh), "closed_fetchers", len(old))
	for _, what := range restartNeeded(prev.plan, next) {
		l.logger.Warn("reload: this change needs a restart; the running value is kept", "setting", what)
	}
}

// restartNeeded lists the settings of next that differ from the running
// plan's but are fixed for the life of the process (the listeners and the
// HTTP server's timeouts, the log).
func restartNeeded(cur, next *config.Plan) []string {
	var out []string
	for _, c := range []struct {
		name string
		a, b any
	}{
		{"listen", cur.Listen, next.Listen},
		{"grpc_listen", cur.GRPCListen, next.GRPCListen},
		{"admin_listen", cur.AdminListen, next.AdminListen},
		// The files themselves are reloaded when they change (tlsfiles);
		// which files, and whether TLS is on, is the listener's.
		{"tls", cur.TLS, next.TLS},
		{"grpc_tls", cur.GRPCTLS, next.GRPCTLS},
		{"HTTP server timeouts (derived from the issuers' refresh waits)", cur.HTTP, next.HTTP},
		{"log.level", cur.LogLevel, next.LogLevel},
		{"log.format", cur.LogFormat, next.LogFormat},
	} {
		if !reflect.DeepEqual(c.a, c.b) {
			out = append(out, c.name)
		}
	}
	return out
}

// retire closes fs, cs and rs once the requests still using them are done: after
// grace (the longest a request may take, the HTTP write timeout), or at
// once when the service closes.
func (l *live) retire(fs []*jwks.Fetcher, cs []*introspect.Client, rs []*replay.Redis, grace time.Duration) {
	if len(fs) == 0 && len(cs) == 0 && len(rs) == 0 {
		return
	}
	l.retired.Go(func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-l.stop:
		}
		closeFetchers(fs, l.logger)
		closeClients(cs)
		l.closeRedis(rs)
	})
}

// closeRedis closes Redis replay stores.
func (l *live) closeRedis(rs []*replay.Redis) {
	for _, r := range rs {
		if err := r.Close(); err != nil {
			l.logger.Warn("closing the DPoP replay store", "err", err)
		}
	}
}

// closeClients closes introspection clients and waits for their calls.
func closeClients(cs []*introspect.Client) {
	for _, c := range cs {
		c.Close()
	}
}

// setDraining marks the current generation draining, for good: no reload
// is swapped in afterwards.
func (l *live) setDraining() *service {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.draining = true
	s := l.cur.Load()
	s.server.SetDraining()
	return s
}

// close stops every fetcher: the current generation's and the retired
// ones; it waits for them.
func (l *live) close() {
	close(l.stop)
	l.retired.Wait()
	var fs []*jwks.Fetcher
	for _, f := range l.cur.Load().fetchers {
		fs = append(fs, f.f)
	}
	closeFetchers(fs, l.logger)
	closeClients(l.cur.Load().clients)
	l.closeRedis(l.redis)
}

func closeFetchers(fs []*jwks.Fetcher, logger *slog.Logger) {
	for _, f := range fs {
		if err := f.Close(); err != nil && !errors.Is(err, jwks.ErrClosed) {
			logger.Warn("closing key fetcher", "err", err)
		}
	}
}

// watch reloads path on each signal from hup (SIGHUP) and when its content
// changes (polled every configPollInterval), until ctx is done. load reads
// and plans the file.
func (l *live) watch(ctx context.Context, path string, load func() (*config.Plan, error), hup <-chan os.Signal) {
	t := time.NewTicker(configPollInterval)
	defer t.Stop()
	seen := l.cur.Load().plan.Hash // the content last tried, valid or not
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			l.logger.Info("SIGHUP: reloading the configuration", "file", path)
		case <-t.C:
			h, err := config.FileHash(path)
			if err != nil || h == seen {
				continue // unreadable for a moment (being replaced): wait for its content
			}
			l.logger.Info("configuration file changed: reloading", "file", path)
		}
		plan, err := load()
		if plan != nil {
			seen = plan.Hash
		} else if h, herr := config.FileHash(path); herr == nil {
			seen = h // an invalid content is reported once, not every poll
		}
		l.reload(ctx, plan, err)
	}
}

// handler serves HTTP with the generation current when each request
// starts, with the service's own rules: from the signal on every answer
// closes its connection, so that pooled clients reconnect to a ready
// instance; a request with a body (a batch may hold tokens of every issuer)
// waits for unknown-kid refreshes and introspection calls at most
// plan.HTTP.Wait in total, so that it is answered before the server's
// timeouts close its connection. Those timeouts are the first plan's: when
// a reloaded plan allows longer waits than they were derived from, every
// request is held to the first plan's budget.
func (l *live) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := l.cur.Load()
		if s.server.Draining() {
			w.Header().Set("Connection", "close")
		}
		if longer := s.plan.HTTP.Wait > l.wait; r.Body != http.NoBody || longer {
			ctx, cancel := context.WithTimeout(r.Context(), min(s.plan.HTTP.Wait, l.wait))
			defer cancel()
			r = r.WithContext(ctx)
		}
		s.server.Handler().ServeHTTP(w, r)
	})
}
