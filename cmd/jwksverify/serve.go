package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/extauthz"
	"github.com/jwksverify/jwksverify/server/metrics"
	"github.com/jwksverify/jwksverify/verify"
)

// HTTP server limits of the service (slowloris, oversized headers).
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 10 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
	// mergeInterval is how often a jwks_file + secret_file issuer folds the
	// file's latest set into its published set.
	mergeInterval = time.Second
)

func (a *app) serve(ctx context.Context, args []string) int {
	fs := a.newFlagSet("serve")
	configPath := fs.String("config", "", "configuration `file` (also JWKSVERIFY_CONFIG)")
	demo := fs.Bool("demo", false, "run with an embedded demo issuer on loopback and print a ready curl line")
	var fl overrides
	fs.Func("listen", "HTTP listen `address` host:port (also JWKSVERIFY_LISTEN)", func(v string) error {
		fl.Listen, fl.ListenSet = v, true
		return nil
	})
	fs.Func("grpc-listen", "Envoy ext_authz gRPC listen `address`; empty = off (also JWKSVERIFY_GRPC_LISTEN)", func(v string) error {
		fl.GRPCListen, fl.GRPCListenSet = v, true
		return nil
	})
	fs.Func("log-level", "log `level`: debug, info, warn, error (also JWKSVERIFY_LOG_LEVEL)", func(v string) error {
		fl.LogLevel, fl.LogLevelSet = v, true
		return nil
	})
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 {
		fmt.Fprintf(a.stderr, "jwksverify serve: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	if *configPath == "" && !*demo {
		if v, ok := a.lookupEnv("JWKSVERIFY_CONFIG"); ok {
			*configPath = v
		}
	}
	ov := envOverrides(a.lookupEnv, fl)
	switch {
	case *demo && *configPath != "":
		fmt.Fprintln(a.stderr, "jwksverify serve: --demo runs its own configuration; drop --config")
		return exitUsage
	case !*demo && *configPath == "":
		fmt.Fprint(a.stderr, "jwksverify serve: --config FILE (or JWKSVERIFY_CONFIG) is required; try --demo for a zero-setup run\n\n", commandUsage["serve"])
		return exitUsage
	}

	if *demo {
		return a.serveDemo(ctx, ov)
	}
	cfg, err := loadConfigFile(*configPath, ov, a.lookupEnv)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve: %v\n", err)
		return exitUsage
	}
	logger := newLogger(a.stderr, cfg.LogLevel, cfg.LogFormat)
	return a.runService(ctx, cfg, logger, nil)
}

// service is the wired-up service: key sources, verifier and server.
type service struct {
	cfg      *config
	log      *slog.Logger
	verifier *verify.Verifier
	server   *server.Server
	fetchers []*jwks.Fetcher
	merges   []*mergedSource
}

// close stops every fetcher and waits for them.
func (s *service) close() {
	for _, f := range s.fetchers {
		if err := f.Close(); err != nil {
			s.log.Warn("closing key fetcher", "err", err)
		}
	}
}

// newService builds one key source per issuer, the verifier and the server.
// Errors are configuration errors. On error nothing is left running.
func newService(cfg *config, logger *slog.Logger) (_ *service, err error) {
	s := &service{cfg: cfg, log: logger}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	var issuers []verify.Issuer
	claimHeaders := map[string]map[string]string{}
	for i, ic := range cfg.Issuers {
		is, err := s.keySource(ic)
		if err != nil {
			return nil, fmt.Errorf("issuers[%d] (%s): %w", i, ic.Issuer, err)
		}
		is.Issuer = ic.Issuer
		is.Audiences = ic.Audiences
		is.Algorithms = ic.Algorithms
		is.AllowHMAC = ic.Secret != nil || ic.JWKSFile != ""
		is.Leeway = leewayOption(ic.Leeway)
		is.RequiredClaims = ic.RequiredClaims
		is.Type = ic.Type
		is.ExtractClaims = sortedKeys(ic.ClaimsToHeaders)
		if len(ic.ClaimsToHeaders) > 0 {
			claimHeaders[ic.Issuer] = ic.ClaimsToHeaders
		}
		issuers = append(issuers, is)
	}
	s.verifier, err = verify.New(verify.Options{
		Issuers:       issuers,
		MaxTokenBytes: cfg.MaxTokenBytes,
		TokenCache:    verify.TokenCacheOptions{MaxEntries: cfg.TokenCacheMax, MaxBytes: cfg.TokenCacheBytes},
	})
	if err != nil {
		return nil, err
	}
	var sources []server.TokenSource
	for _, ts := range cfg.TokenSources {
		sources = append(sources, server.TokenSource(ts))
	}
	var clients []server.IntrospectionClient
	for _, c := range cfg.Introspection {
		clients = append(clients, server.IntrospectionClient{ID: c.ID, Secret: c.Secret})
	}
	m, err := metrics.New(metrics.Options{Verifier: s.verifier})
	if err != nil {
		return nil, err
	}
	s.server, err = server.New(server.Options{
		Metrics:              m,
		MetricsHandler:       m.Handler(),
		Verifier:             s.verifier,
		TokenSources:         sources,
		ClaimsToHeaders:      claimHeaders,
		StripAuthorization:   cfg.StripAuth,
		IntrospectionClients: clients,
		MaxBodyBytes:         cfg.MaxBodyBytes,
		MaxBatch:             cfg.MaxBatch,
		Logger:               logger,
		Version:              moduleVersion(),
		RejectionLogRate:     rejectionLogRate(cfg.LogRejections),
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// rejectionLogRate maps log.rejections_per_second to
// server.Options.RejectionLogRate, where zero means the default: an explicit
// 0 ("no limit") becomes negative.
func rejectionLogRate(perSecond int) int {
	if perSecond == 0 {
		return -1
	}
	return perSecond
}

// leewayOption maps the configured leeway to verify.Issuer.Leeway, where
// zero means the default: an explicit 0s becomes "no leeway".
func leewayOption(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// keySource returns an Issuer with Keys (and Refresher) set for ic: a
// fetcher for discovery, a URL or a file; a static set for a secret; both,
// merged, for a file with a secret.
func (s *service) keySource(ic issuerConfig) (verify.Issuer, error) {
	var secret *cache.Key
	if ic.Secret != nil {
		k, err := cache.NewKey(ic.Secret, cache.KeyMeta{Kid: ic.SecretKid, Local: true, Use: "sig"})
		if err != nil {
			return verify.Issuer{}, fmt.Errorf("secret_file: %w", err)
		}
		secret = k
	}
	if !ic.Discovery && ic.JWKSURL == "" && ic.JWKSFile == "" {
		keys := &cache.Keys{}
		now := time.Now()
		keys.Store(cache.NewSet([]*cache.Key{secret}, nil, now, time.Time{}))
		keys.SetStatus(cache.Status{Source: "secret_file:" + ic.SecretFile, LastAttempt: now, LastSuccess: now})
		return verify.Issuer{Keys: keys}, nil
	}
	f, err := jwks.New(jwks.Options{
		Issuer:             ic.Issuer,
		URL:                ic.JWKSURL,
		Discovery:          ic.Discovery,
		File:               ic.JWKSFile,
		FetchTimeout:       ic.FetchTimeout,
		MinInterval:        ic.MinInterval,
		MaxInterval:        ic.MaxInterval,
		DefaultTTL:         ic.DefaultTTL,
		UnknownKidInterval: ic.UnknownKidIntvl,
		UnknownKidWait:     ic.UnknownKidWait,
		StaleFor:           ic.StaleFor,
		MaxBytes:           s.cfg.MaxJWKSBytes,
		MaxKeys:            s.cfg.MaxKeys,
		StateDir:           s.cfg.StateDir,
		InsecureAllowHTTP:  ic.AllowInsecureHTTP,
		Logger:             s.log,
	})
	if err != nil {
		return verify.Issuer{}, err
	}
	s.fetchers = append(s.fetchers, f)
	if secret == nil {
		return verify.Issuer{Keys: f.Keys(), Refresher: f}, nil
	}
	m := &mergedSource{f: f, secret: secret, out: &cache.Keys{}, missFor: ic.UnknownKidIntvl}
	m.sync()
	s.merges = append(s.merges, m)
	return verify.Issuer{Keys: m.out, Refresher: m}, nil
}

// mergedSource publishes a jwks_file's keys together with a secret_file's
// secret: the fetcher publishes the file's sets into its own cache.Keys, and
// the merge folds each new one, with the secret, into the issuer's.
type mergedSource struct {
	f      *jwks.Fetcher
	secret *cache.Key
	out    *cache.Keys
	// missFor is how long a kid a refresh proved absent is remembered in
	// out (the issuer's unknown_kid_interval), so the verifier answers
	// unknown_kid at once instead of asking again.
	missFor time.Duration

	mu   sync.Mutex
	last *cache.Set
	init bool
}

// sync publishes the fetcher's current set plus the secret, if it changed.
func (m *mergedSource) sync() {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.f.Keys().Load()
	m.out.SetStatus(m.f.Keys().Status())
	if m.init && cur == m.last {
		return
	}
	m.init, m.last = true, cur
	if cur == nil {
		// The file has not loaded (yet): the secret alone verifies HS* tokens.
		m.out.Store(cache.NewSet([]*cache.Key{m.secret}, nil, time.Now(), time.Time{}))
		return
	}
	keys := append([]*cache.Key{m.secret}, cur.Keys()...)
	m.out.Store(cache.NewSet(keys, cur.Skipped(), cur.FetchedAt, cur.UsableUntil))
}

// RefreshUnknownKid implements verify.Refresher: the file is re-read, then
// merged at once so the verifier sees the result.
func (m *mergedSource) RefreshUnknownKid(ctx context.Context, kid string) error {
	err := m.f.RefreshUnknownKid(ctx, kid)
	if errors.Is(err, jwks.ErrSuppressed) {
		return err // nothing was fetched; the periodic merge picks up others' refreshes
	}
	m.sync()
	if err == nil {
		if _, ok := m.out.Load().Lookup(kid); !ok {
			m.out.RememberMissing(kid, time.Now().Add(m.missFor))
		}
	}
	return err
}

// run merges every mergeInterval until ctx is done.
func (m *mergedSource) run(ctx context.Context) error {
	t := time.NewTicker(mergeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			m.sync()
		}
	}
}

// listen opens addr, with a message that says what to do when it is taken.
func listen(addr, what, flagName string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%s address %s is already in use (another jwksverify running?); choose another with %s", what, addr, flagName)
		}
		return nil, fmt.Errorf("%s listen on %s: %w", what, addr, err)
	}
	return ln, nil
}

// runService wires cfg, serves until ctx is done, drains and shuts down.
// onReady, if set, runs once the service answers /readyz with 200.
func (a *app) runService(ctx context.Context, cfg *config, logger *slog.Logger, onReady func(ctx context.Context, base string) error) int {
	svc, err := newService(cfg, logger)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve: %v\n", err)
		return exitUsage
	}
	defer svc.close()

	ln, err := listen(cfg.Listen, "HTTP", "--listen")
	if err != nil {
		logger.Error("cannot listen", "err", err)
		return exitFailure
	}
	var gln net.Listener
	if cfg.GRPCListen != "" {
		if gln, err = listen(cfg.GRPCListen, "gRPC", "--grpc-listen"); err != nil {
			ln.Close()
			logger.Error("cannot listen", "err", err)
			return exitFailure
		}
	}

	httpSrv := &http.Server{
		Handler:           svc.server.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	var grpcSrv *grpc.Server
	if gln != nil {
		grpcSrv = grpc.NewServer(grpc.MaxRecvMsgSize(int(cfg.MaxBodyBytes)))
		extauthz.Register(grpcSrv, svc.server)
	}

	attrs := []any{"http", ln.Addr().String()}
	if gln != nil {
		attrs = append(attrs, "grpc", gln.Addr().String())
	}
	logger.Info("listening", attrs...)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := httpSrv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("HTTP server: %w", err)
		}
		return nil
	})
	if grpcSrv != nil {
		g.Go(func() error {
			if err := grpcSrv.Serve(gln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				return fmt.Errorf("gRPC server: %w", err)
			}
			return nil
		})
	}
	for _, m := range svc.merges {
		g.Go(func() error { return m.run(gctx) })
	}
	if onReady != nil {
		base := "http://" + dialable(ln.Addr().String())
		g.Go(func() error {
			if err := waitReady(gctx, base); err != nil {
				if gctx.Err() != nil {
					return nil
				}
				return err
			}
			return onReady(gctx, base)
		})
	}
	var drainErr error
	g.Go(func() error {
		<-gctx.Done()
		// Tell load balancers and Envoy first: /readyz answers 503 draining,
		// gRPC health NOT_SERVING (open Watch streams end), and HTTP
		// responses close their connections, so that pooled clients
		// reconnect to a ready instance; every request is still served.
		// After shutdown_delay (on a signal only: a failed server has
		// nothing to wait for), stop accepting and drain what is in flight,
		// within shutdown_timeout.
		svc.server.SetDraining()
		httpSrv.SetKeepAlivesEnabled(false)
		logger.Info("shutting down", "delay", cfg.ShutdownDelay.String(), "timeout", cfg.ShutdownTimeout.String())
		if ctx.Err() != nil && cfg.ShutdownDelay > 0 {
			delay := time.NewTimer(cfg.ShutdownDelay)
			<-delay.C // a second signal ends the process at once (main)
		}
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		var wg sync.WaitGroup
		if grpcSrv != nil {
			wg.Go(func() {
				done := make(chan struct{})
				go func() { grpcSrv.GracefulStop(); close(done) }()
				select {
				case <-done:
				case <-sctx.Done():
					grpcSrv.Stop()
					<-done
				}
			})
		}
		if err := httpSrv.Shutdown(sctx); err != nil {
			drainErr = fmt.Errorf("draining HTTP requests: %w", err)
			httpSrv.Close()
		}
		wg.Wait()
		if sctx.Err() != nil && drainErr == nil {
			drainErr = errors.New("draining gRPC calls: shutdown_timeout passed")
		}
		return nil
	})
	err = g.Wait()
	code := exitOK
	if err != nil {
		logger.Error("service failed", "err", err)
		code = exitFailure
	}
	if drainErr != nil {
		logger.Warn("shutdown did not drain in time; remaining connections were closed", "err", drainErr)
		code = exitFailure
	}
	if code == exitOK {
		logger.Info("stopped")
	}
	return code
}

// dialable turns a listen address into one a local client can dial
// (0.0.0.0 and :: become loopback).
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// waitReady polls base/readyz until it answers 200 or ctx is done.
func waitReady(ctx context.Context, base string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	delay := 20 * time.Millisecond
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}
