// Package service is jwksverify's runtime as a library: from a
// configuration plan (package config) it builds and runs the whole service
// — the issuers' key fetchers and introspection clients, the DPoP replay
// store, the token cache, the verifier, the server and its metrics, the
// Envoy ext_authz gRPC services — and reloads it with another plan while it
// serves, keeping what did not change.
//
// A program embeds it in a few lines: [New] with a plan, serve [Service.Handler]
// (and [Service.AdminHandler], [Service.RegisterGRPC]) on its own
// listeners, [Service.Reload] when its configuration changes, [Service.Close]
// at the end. [Check] builds what New builds and starts nothing: the check
// of a configuration before it is served. Listeners, TLS, signals and
// flags stay with the program (cmd/jwksverify).
package service

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/extauthz"
	"github.com/jwksverify/jwksverify/server/metrics"
)

// Options are what the embedding program gives a [Service] besides its
// plan.
type Options struct {
	// Logger receives the service's log lines. Nil means slog.Default().
	Logger *slog.Logger
	// Tracer records the spans of requests, verifications and fetches;
	// nil means none (at no cost). Propagator reads the trace context of
	// incoming requests; nil means W3C Trace Context when Tracer is set.
	Tracer     trace.Tracer
	Propagator propagation.TextMapPropagator
	// Version and Revision are reported by /v1/issuers and the
	// jwksverify_build_info metric. Empty means "unknown".
	Version, Revision string
}

// withDefaults fills the zero values of o.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Tracer != nil && o.Propagator == nil {
		o.Propagator = propagation.TraceContext{}
	}
	return o
}

// Service is a plan at work, across reloads: the current generation (a
// plan's fetchers, clients, verifier and server, some inherited from the
// generation before) swapped atomically, and what outlives every
// generation: the metrics, the token cache, the DPoP replay store, the gRPC
// services. Build it with [New]; its methods are safe for concurrent use.
// The Service owns the goroutines of its fetchers and clients: [Service.Close]
// stops them and waits.
type Service struct {
	cur     atomic.Pointer[generation]
	opts    Options
	metrics *metrics.Metrics
	grpc    *extauthz.Service

	reloading sync.Mutex // serializes reloads
	mu        sync.Mutex // serializes a reload's swap, the drain and Close
	draining  bool
	closing   bool // Close has begun: no generation is swapped in

	// wait is the wait budget of the first plan, from which the program's
	// HTTP server timeouts were derived for the life of the process
	// (config.Timeouts.Wait): no request waits longer, whatever a reload
	// says.
	wait time.Duration

	retired sync.WaitGroup // goroutines closing what replaced generations held
	stop    chan struct{}  // closed by Close: retired fetchers close at once
	closed  sync.Once

	// The DPoP replay store outlives generations, as the token cache does:
	// a reload must not forget the proofs already used. A reload that
	// changes the store's settings starts a new one, whose checker asks
	// the old one about the proofs of its time (holds).
	replayPlan   *config.DPoP
	replayStore  dpop.ReplayStore
	replayClient *redisconn.Client // the Redis client under replayStore, nil for memory
	// The Redis client (redisconn) outlives generations too: redis is the
	// one of redisOpts, the latest settings; redisAll every client not yet
	// closed. A reload that changes the settings starts a new client; the
	// one in use is closed by Close, replaced ones are retired.
	redis     *redisconn.Client
	redisOpts redisconn.Options
	redisAll  []*redisconn.Client
	// redisInUse is the client of the current generation's plan (nil
	// without Redis), for the metrics, which read it at each scrape.
	redisInUse atomic.Pointer[redisconn.Client]
	// holds are the Redis clients kept under the replay store of a
	// retired DPoP checker, which its successors over another store ask
	// about the proofs of its time (dpop.Options.Replaces) for
	// dpop.RetiredWindow (holdReplay). A client that a reload replaced
	// meanwhile is left out of redisAll (replacedRedis) and closed when
	// its last hold ends, or at Close.
	holdMu sync.Mutex
	holds  map[*redisconn.Client]*replayHold
	// holdEnd ends the hold of a retired replay store of a checker of
	// maxAge (nil: a timer of dpop.RetiredWindow and a minute); tests
	// end it themselves.
	holdEnd func(maxAge time.Duration) <-chan time.Time

	// The revocation store outlives generations too: it is opened with
	// the first plan and kept (a reload that changes the revocation
	// section, or the redis section under it, needs a restart). Nil when
	// revocation is not configured.
	revocations *revocations

	// The revocation signals' jti store, metrics and pollers outlive
	// generations too (service/signals.go).
	signals signalState
}

// errNoPlan refuses a nil plan (what config.Load returns beside its error).
var errNoPlan = errors.New("service: no plan (nil *config.Plan)")

// redisStats are the counters of the Redis client in use (metrics.Options.Redis).
func (s *Service) redisStats() (redisconn.Stats, bool) {
	c := s.redisInUse.Load()
	if c == nil {
		return redisconn.Stats{}, false
	}
	return c.Stats(), true
}

// useRedis records the Redis client of plan, the one in use from now on.
func (s *Service) useRedis(plan *config.Plan) {
	if plan.Redis == nil {
		s.redisInUse.Store(nil)
		return
	}
	s.redisInUse.Store(s.redis)
}

// New builds the service of plan and starts its fetchers and clients. It
// does not wait for the first keys ([Service.Ready] does). The caller must
// Close it.
func New(plan *config.Plan, o Options) (*Service, error) {
	if plan == nil {
		return nil, errNoPlan
	}
	s := &Service{opts: o.withDefaults(), stop: make(chan struct{}), wait: plan.HTTP.Wait}
	b := &builder{s: s}
	fail := func(err error) (*Service, error) {
		b.undo()
		s.closeRedis(s.redisAll) // a Redis client the build started
		s.revocations.close()
		return nil, err
	}
	var err error
	if s.revocations, err = openRevocations(plan.Revocation, plan.Redis, s.opts.Logger); err != nil {
		return fail(err)
	}
	gen, err := b.build(plan)
	if err != nil {
		return fail(err)
	}
	s.useRedis(plan)
	m, err := metrics.New(metrics.Options{Verifier: gen.server.Verifier(), Version: o.Version, Revision: o.Revision, Policies: plan.Server.Policies,
		Redis: s.redisStats})
	if err != nil {
		return fail(err)
	}
	s.metrics = m
	if s.signals.metrics, err = m.UseSignals(); err != nil {
		return fail(err)
	}
	if s.revocations != nil {
		if src, ok := s.revocations.store.(metrics.RevocationSource); ok {
			if err := m.UseRevocations(src); err != nil {
				return fail(err)
			}
		}
	}
	// The server is built again now that the metrics exist: they count
	// every generation's decisions.
	if gen.server, err = s.newServer(plan, gen.server.Verifier(), gen.minter, nil); err != nil {
		return fail(err)
	}
	gen.dpop = gen.server.DPoP()
	if plan.Hash != "" {
		m.SetConfigHash(plan.Hash)
	}
	s.grpc = extauthz.New(gen.server)
	m.UseMinter(gen.minter)
	m.UseDPoP(gen.server.DPoP())
	s.cur.Store(gen)
	if err := s.syncPollers(plan); err != nil {
		s.closePollers()
		return fail(err)
	}
	return s, nil
}

// Handler serves the service's HTTP API with the generation current when
// each request starts, with the service's own rules: once draining
// ([Service.Drain]) every answer closes its connection, so that pooled
// clients reconnect to a ready instance; a request with a body (a batch may
// hold tokens of every issuer) waits for unknown-kid refreshes and
// introspection calls at most the plan's HTTP.Wait in total, so that it is
// answered before the server's timeouts (config.Timeouts) close its
// connection. Those timeouts are the first plan's: when a reloaded plan
// allows longer waits than they were derived from, every request is held
// to the first plan's budget.
func (s *Service) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := s.cur.Load()
		if g.server.Draining() {
			w.Header().Set("Connection", "close")
		}
		if longer := g.plan.HTTP.Wait > s.wait; r.Body != http.NoBody || longer {
			ctx, cancel := context.WithTimeout(r.Context(), min(g.plan.HTTP.Wait, s.wait))
			defer cancel()
			r = r.WithContext(ctx)
		}
		g.server.Handler().ServeHTTP(w, r)
	})
}

// AdminHandler serves the admin endpoints (/healthz, /readyz, /v1/issuers,
// /metrics) of the current generation, for a listener of their own
// (config.Plan.AdminListen), closing connections once draining as Handler
// does.
func (s *Service) AdminHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := s.cur.Load()
		if g.server.Draining() {
			w.Header().Set("Connection", "close")
		}
		g.server.AdminHandler().ServeHTTP(w, r)
	})
}

// RegisterGRPC registers the Envoy ext_authz (v3) Authorization service and
// the gRPC health service on g; they answer with the current generation
// across reloads. A unary method's panic ends its call with INTERNAL,
// logged, not the process (grpc-go recovers none). Build g with
// [Service.GRPCServerOptions] for the bounds the configuration names
// (limits.max_body_bytes for a message, among others).
func (s *Service) RegisterGRPC(g grpc.ServiceRegistrar) {
	s.grpc.Register(recovering{g, s.opts.Logger})
}

// Ready blocks until every issuer of the current generation has its first
// keys (or a definitive failure to get them), or ctx is done. A reload
// that swaps in another generation meanwhile is followed: its replaced
// fetchers retire (closed to Ready), and the new generation is waited for.
func (s *Service) Ready(ctx context.Context) error {
	for {
		g := s.cur.Load()
		err := g.ready(ctx)
		if err == nil || ctx.Err() != nil || s.cur.Load() == g {
			return err
		}
	}
}

// ready blocks until every fetcher of g has its first keys, or one is
// closed (or retired), or ctx is done.
func (g *generation) ready(ctx context.Context) error {
	for _, f := range g.fetchers {
		if err := f.f.Ready(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Plan returns the plan the service currently serves.
func (s *Service) Plan() *config.Plan { return s.cur.Load().plan }

// Server returns the current generation's server: its verifier, its
// readiness, its limits. A reload replaces it.
func (s *Service) Server() *server.Server { return s.cur.Load().server }

// Middleware protects next, an application handler in the program that
// runs the service, with the service's whole pipeline
// ([server.Server.Middleware]: token sources, the verifier, revocation,
// sender constraints, the policies of the routes; the request is the
// original) as the generation current when each request starts has it, so
// that a reload applies to it as it does to [Service.Handler]. Its
// decisions are counted with the service's metrics. An allowed request
// reaches next with the token in its context (server.ResultFromContext).
//
// A nil next panics here, as http.ServeMux.Handle refuses a nil handler.
func (s *Service) Middleware(next http.Handler) http.Handler {
	if next == nil {
		panic("service.Service.Middleware: nil handler")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.cur.Load().server.Admit(w, r, next)
	})
}

// Metrics returns the service's metrics, which outlive reloads. A program
// counts there what it does around the service, such as a configuration
// file that fails to load (Metrics.Reloaded).
func (s *Service) Metrics() *metrics.Metrics { return s.metrics }

// Drain marks the service draining, for good: /readyz answers 503
// draining, gRPC health NOT_SERVING, every HTTP answer closes its
// connection; every request is still served. No reload is swapped in
// afterwards. It returns the plan being drained (its ShutdownDelay and
// ShutdownTimeout).
func (s *Service) Drain() *config.Plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	g := s.cur.Load()
	g.server.SetDraining()
	return g.plan
}

// Close stops every fetcher and client, the current generation's and the
// retired ones, the Redis replay stores (also those kept for a reload's
// switch of stores) and the mint keys file's watch, and waits for them. Serve no
// request after it: readiness answers as after [Service.Drain] (503, gRPC
// health NOT_SERVING), and every request the handlers, the Middleware or
// the gRPC services are still handed is refused 503 keys_unavailable
// (never allowed). It is safe to call more than once.
func (s *Service) Close() error {
	s.closed.Do(func() {
		s.mu.Lock()
		s.closing = true // a reload in flight swaps nothing in
		// Nothing refreshes keys or follows the revocations from now on:
		// readiness says so (/readyz 503, gRPC health NOT_SERVING), as
		// after Drain, to a program that keeps its listeners, and every
		// decision is refused (503), never allowed on frozen state.
		s.cur.Load().server.SetClosed()
		s.mu.Unlock()
		close(s.stop) // ends a reload's wait for keys
		// Wait for a reload in flight: it undoes what it started, and no
		// retirement or poller of its own starts after this.
		s.reloading.Lock()
		defer s.reloading.Unlock()
		s.closePollers() // before the stores their SETs go to
		s.retired.Wait()
		g := s.cur.Load()
		var fs []*jwks.Fetcher
		for _, f := range g.fetchers {
			fs = append(fs, f.f)
		}
		s.closeFetchers(fs)
		closeClients(g.clients)
		s.closeRedis(s.redisAll)
		if g.minter != nil {
			_ = g.minter.Close()
		}
		s.revocations.close()
	})
	return nil
}

// Revocations returns the revocation store, which outlives reloads: the
// revoke.Adder that the back-channel logout and Shared Signals receivers
// store their entries through. Nil when revocation is not configured.
func (s *Service) Revocations() server.Revocations {
	if s.revocations == nil {
		return nil
	}
	return s.revocations.store
}

func (s *Service) closeFetchers(fs []*jwks.Fetcher) {
	for _, f := range fs {
		if err := f.Close(); err != nil && !errors.Is(err, jwks.ErrClosed) {
			s.opts.Logger.Warn("closing key fetcher", "err", err)
		}
	}
}
