package service

import (
	"context"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/server/metrics"
)

// newIssuerWait bounds how long a reload waits for the first keys of the
// issuers it adds before it swaps anyway (they are then not ready until
// their keys come, as at start).
const newIssuerWait = 10 * time.Second

// Reload builds the generation of next and swaps it in atomically:
// requests in flight finish under the old generation; the fetchers of
// issuers next removed or changed stop fetching at the swap
// ([jwks.Fetcher.Retire]: their last keys serve those requests, an
// unknown kid gets no refresh), and they, the introspection clients and
// Redis replay stores of such issuers and settings close once those
// requests are done (after the old plan's HTTP write timeout, or at
// Close), and their cached verdicts go. A DPoP replay store that next
// replaces by another is still asked about the proofs used before the
// reload (dpop.Options.Replaces): a Redis one is closed after
// dpop.RetiredWindow of the old max_age, or at Close. Issuers whose
// settings did not change keep their keys and caches. When next does not
// build, the old generation keeps serving and Reload returns why. Either
// way the outcome is counted (jwksverify_reloads_total) and logged. It
// waits for the first keys of added issuers (at most 10s, and ctx), so
// that a reload does not turn the instance unready for an issuer whose
// keys are on their way. After [Service.Drain] or [Service.Close] it
// swaps nothing and returns nil. A nil next is a failed reload (an error).
// Reloads run one at a time.
func (s *Service) Reload(ctx context.Context, next *config.Plan) error {
	if next == nil {
		s.ReloadFailed(errNoPlan)
		return errNoPlan
	}
	s.reloading.Lock()
	defer s.reloading.Unlock()
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return nil
	}
	prev := s.cur.Load()
	b := &builder{s: s, prev: prev}
	g, err := b.build(keepListeners(prev.plan, next))
	if err != nil {
		s.ReloadFailed(err)
		return err
	}
	s.awaitFresh(ctx, g, b.fresh)
	s.mu.Lock()
	if s.draining || s.closing {
		s.mu.Unlock()
		b.undo()
		return nil
	}
	if old := prev.server.DPoP(); old != nil {
		// Before the swap: its successor asks its store about the proofs
		// it may have used until then (dpop.Checker.Retire).
		old.RetireTo(time.Now(), g.server.DPoP())
		s.holdReplay(b.saved, g, old)
	}
	s.cur.Store(g)
	s.commitReplayBound()
	s.useRedis(next)
	s.grpc.Swap(g.server)
	s.metrics.Use(g.server.Verifier())
	s.metrics.UseMinter(g.minter)
	s.metrics.UseDPoP(g.server.DPoP())
	if g.cache != nil {
		g.cache.Keep(g.server.Verifier()) // the verdicts of removed and changed issuers go
	}
	s.metrics.SetConfigHash(next.Hash)
	s.mu.Unlock()
	old, oldClients := replaced(prev, g)
	for _, f := range old {
		// Its successor has taken over: it fetches and logs no more (no
		// second fetcher asking an IdP in an outage, no second
		// "recovered"). Its keys serve the requests still on prev until
		// retire closes it.
		f.Retire()
	}
	s.metrics.Reloaded(metrics.ReloadSuccess)
	if err := s.syncPollers(next); err != nil {
		// config checked every poller's options: not expected.
		s.opts.Logger.Error("reload: the SET pollers could not be started", "err", err)
	}

	s.retire(old, oldClients, s.replacedRedis(), prev.plan.HTTP.Write)
	if prev.minter != nil && prev.minter != g.minter {
		// Only its watch stops: requests in flight may still mint with it.
		_ = prev.minter.Close()
	}
	s.opts.Logger.Info("configuration reloaded", "hash", next.Hash, "issuers", len(next.Issuers),
		"new_fetchers", len(b.fresh), "closed_fetchers", len(old))
	for _, what := range restartNeeded(prev.plan, next) {
		s.opts.Logger.Warn("reload: this change needs a restart; the running value is kept", "setting", what)
	}
	return nil
}

// ReloadFailed counts and logs a reload that failed before a plan could be
// given to Reload (a configuration file that does not load): the previous
// configuration keeps serving.
func (s *Service) ReloadFailed(err error) {
	s.metrics.Reloaded(metrics.ReloadFailure)
	s.opts.Logger.Error("configuration reload failed; the previous configuration keeps serving", "err", err)
}

// awaitFresh waits for the first keys of fresh fetchers (of g), at most
// newIssuerWait and ctx, and names each issuer whose keys did not come.
func (s *Service) awaitFresh(ctx context.Context, g *generation, fresh []*jwks.Fetcher) {
	if len(fresh) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, newIssuerWait)
	defer cancel()
	go func() { // Close ends the wait
		select {
		case <-s.stop:
			cancel()
		case <-wctx.Done():
		}
	}()
	// Every fetcher is waited for (one that is ready returns at once after
	// the wait ends), so that each issuer without keys gets its own line.
	for _, f := range fresh {
		if f.Ready(wctx) != nil {
			s.opts.Logger.Warn("reload: an added or changed issuer has no keys yet; it is not ready until they come",
				"issuer", g.issuerOf(f), "source", f.Keys().Status().Source)
		}
	}
}

// issuerOf returns the configured issuer whose keys f fetches.
func (g *generation) issuerOf(f *jwks.Fetcher) string {
	for _, gf := range g.fetchers {
		if gf.f == f {
			return gf.opts.Issuer
		}
	}
	return ""
}

// replaced returns the fetchers and clients of prev that g does not use.
func replaced(prev, g *generation) ([]*jwks.Fetcher, []*introspect.Client) {
	kept := make(map[*jwks.Fetcher]bool, len(g.fetchers))
	for _, f := range g.fetchers {
		kept[f.f] = true
	}
	var old []*jwks.Fetcher
	for _, f := range prev.fetchers {
		if !kept[f.f] {
			old = append(old, f.f)
		}
	}
	keptClients := make(map[*introspect.Client]bool, len(g.clients))
	for _, c := range g.clients {
		keptClients[c] = true
	}
	var oldClients []*introspect.Client
	for _, c := range prev.clients {
		if !keptClients[c] {
			oldClients = append(oldClients, c)
		}
	}
	return old, oldClients
}

// replacedRedis removes from s.redisAll and returns the Redis clients of
// replaced settings; the one in use stays (also when the plan uses no
// Redis: a later one may use it again).
func (s *Service) replacedRedis() []*redisconn.Client {
	var old, kept []*redisconn.Client
	for _, c := range s.redisAll {
		switch {
		case c == s.redis:
			kept = append(kept, c)
		case s.handOver(c): // closed when its hold ends
		default:
			old = append(old, c)
		}
	}
	s.redisAll = kept
	return old
}

// replayHold is the holds of a Redis client under retired replay stores.
type replayHold struct {
	n      int  // holds not yet ended
	orphan bool // a reload replaced the client: its last hold closes it
}

// holdReplay keeps the Redis client under the replay store of old, the
// DPoP checker swapped out (retired) now, while its successors may ask that
// store about the proofs old used (dpop.RetiredWindow of its max_age, and
// a minute for the requests then running), when next does not record
// proofs there: another store, or no DPoP. A client that a reload replaces
// meanwhile is closed when the hold ends; the service's own client stays.
// saved is the shared state before next was built.
func (s *Service) holdReplay(saved shared, next *generation, old *dpop.Checker) {
	c := saved.replayClient
	if c == nil || (next.server.DPoP() != nil && s.replayStore == saved.replayStore) {
		return
	}
	var end <-chan time.Time
	if s.holdEnd != nil {
		end = s.holdEnd(old.MaxAge())
	} else {
		t := time.NewTimer(dpop.RetiredWindow(old.MaxAge()) + time.Minute)
		end = t.C // unstopped: once the hold ends, nothing refers to it and it is collected (Go 1.23)
	}
	s.holdMu.Lock()
	h := s.holds[c]
	if h == nil {
		if s.holds == nil {
			s.holds = make(map[*redisconn.Client]*replayHold)
		}
		h = &replayHold{}
		s.holds[c] = h
	}
	h.n++
	s.holdMu.Unlock()
	s.retired.Go(func() {
		select {
		case <-end:
		case <-s.stop:
		}
		s.holdMu.Lock()
		h.n--
		closing := h.n == 0 && h.orphan
		if h.n == 0 {
			delete(s.holds, c)
		}
		s.holdMu.Unlock()
		if closing {
			s.closeRedis([]*redisconn.Client{c})
		}
	})
}

// handOver reports whether c, a client a reload replaced, is held under a
// retired replay store, and if so leaves its closing to the hold's end.
func (s *Service) handOver(c *redisconn.Client) bool {
	s.holdMu.Lock()
	defer s.holdMu.Unlock()
	h := s.holds[c]
	if h == nil {
		return false
	}
	h.orphan = true
	return true
}

// restartNeeded lists the settings of next that differ from the running
// plan's but are fixed for the life of the process (the listeners and the
// HTTP server's timeouts, the log): the program that serves the service
// set them up once.
func restartNeeded(cur, next *config.Plan) []string {
	var out []string
	for _, c := range []struct {
		name    string
		changed bool
	}{
		{"listen", cur.Listen != next.Listen},
		{"grpc_listen", cur.GRPCListen != next.GRPCListen},
		{"admin_listen", cur.AdminListen != next.AdminListen},
		// The files themselves are reloaded when they change (tlsfiles);
		// which files, and whether TLS is on, is the listener's.
		{"tls", cur.TLS != next.TLS},
		{"grpc_tls", cur.GRPCTLS != next.GRPCTLS},
		{"admin_tls", cur.AdminTLS != next.AdminTLS},
		{"HTTP server timeouts (derived from the issuers' refresh waits)", cur.HTTP != next.HTTP},
		{"log.level", cur.LogLevel != next.LogLevel},
		{"log.format", cur.LogFormat != next.LogFormat},
		{"revocation", !sameRevocation(cur, next)},
	} {
		if c.changed {
			out = append(out, c.name)
		}
	}
	return out
}

// keepListeners returns next with the listeners of cur, the running plan:
// their addresses and TLS, and so which endpoints each serves
// (Server.SeparateAdmin). A reload cannot open or close a listener
// (restartNeeded names the change), and a server built for next's would
// serve /metrics and /v1/issuers on listen when admin_listen was removed,
// or no /healthz anywhere when it was added. next itself is not changed.
func keepListeners(cur, next *config.Plan) *config.Plan {
	kept := *next
	kept.Listen, kept.GRPCListen, kept.AdminListen = cur.Listen, cur.GRPCListen, cur.AdminListen
	kept.TLS, kept.GRPCTLS, kept.AdminTLS = cur.TLS, cur.GRPCTLS, cur.AdminTLS
	kept.Server.SeparateAdmin = cur.Server.SeparateAdmin
	return &kept
}

// sameRevocation reports whether two plans ask for the same revocation
// store: the revocation section, and for store: redis the redis section.
func sameRevocation(cur, next *config.Plan) bool {
	a, b := cur.Revocation, next.Revocation
	switch {
	case a == nil || b == nil:
		return a == b
	case *a != *b:
		return false
	case a.Store != "redis":
		return true
	}
	return cur.Redis != nil && next.Redis != nil && redisconn.Same(*cur.Redis, *next.Redis)
}

// retire closes fs, cs and rs once the requests still using them are done:
// after grace (the longest a request may take, the HTTP write timeout), or
// at once when the service closes.
func (s *Service) retire(fs []*jwks.Fetcher, cs []*introspect.Client, rs []*redisconn.Client, grace time.Duration) {
	if len(fs) == 0 && len(cs) == 0 && len(rs) == 0 {
		return
	}
	s.retired.Go(func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.stop:
		}
		s.closeFetchers(fs)
		closeClients(cs)
		s.closeRedis(rs)
	})
}

// closeRedis closes Redis clients.
func (s *Service) closeRedis(rs []*redisconn.Client) {
	for _, r := range rs {
		if err := r.Close(); err != nil {
			s.opts.Logger.Warn("closing a Redis client", "err", err)
		}
	}
}
