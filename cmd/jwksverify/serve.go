package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/jwksverify/jwksverify/cmd/jwksverify/internal/buildinfo"
	"github.com/jwksverify/jwksverify/cmd/jwksverify/internal/deadline"
	"github.com/jwksverify/jwksverify/cmd/jwksverify/internal/tlsfiles"
	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/loglimit"
	"github.com/jwksverify/jwksverify/internal/textclip"
	"github.com/jwksverify/jwksverify/service"
)

const (
	// maxHeaderBytes bounds a request's headers, as the gRPC listener
	// bounds a call's metadata.
	maxHeaderBytes = service.MaxHeaderBytes
	// drainGrace is how long, from the signal on, connections that were idle
	// when it came stay open: a client that sends its next request on one
	// meanwhile is answered, with Connection: close like every answer from
	// the signal on, instead of racing a close. The drain starts after
	// shutdown_delay, and never before drainGrace.
	drainGrace = time.Second
)

func (a *app) serve(ctx context.Context, args []string) int {
	fs := a.newFlagSet("serve")
	configPath := fs.String("config", "", "configuration `file` (also JWKSVERIFY_CONFIG)")
	demo := fs.Bool("demo", false, "run with an embedded demo issuer on loopback and print a ready curl line")
	demoIssuer := fs.String("demo-issuer", defaultDemoIssuer, "loopback `address` of --demo's issuer (its URL is http://ADDRESS; port 0 picks a free one)")
	var ov config.Overrides
	for _, f := range []struct {
		name, usage string
		v           **string
	}{
		{"listen", "HTTP listen `address` host:port (also JWKSVERIFY_LISTEN)", &ov.Listen},
		{"grpc-listen", "Envoy ext_authz gRPC listen `address`; empty = off (also JWKSVERIFY_GRPC_LISTEN)", &ov.GRPCListen},
		{"log-level", "log `level`: debug, info, warn, error (also JWKSVERIFY_LOG_LEVEL)", &ov.LogLevel},
	} {
		fs.Func(f.name, f.usage, func(s string) error { *f.v = &s; return nil })
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 {
		fmt.Fprintf(a.stderr, "jwksverify serve: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	if *configPath == "" && !*demo {
		*configPath, _ = a.lookupEnv("JWKSVERIFY_CONFIG")
	}
	switch {
	case *demo && *configPath != "":
		fmt.Fprintln(a.stderr, "jwksverify serve: --demo runs its own configuration; drop --config")
		return exitUsage
	case *demo:
		return a.serveDemo(ctx, ov, *demoIssuer)
	case *demoIssuer != defaultDemoIssuer:
		fmt.Fprintln(a.stderr, "jwksverify serve: --demo-issuer goes with --demo")
		return exitUsage
	case *configPath == "":
		fmt.Fprint(a.stderr, "jwksverify serve: --config FILE (or JWKSVERIFY_CONFIG) is required; try --demo for a zero-setup run\n\n", commandUsage["serve"])
		return exitUsage
	}
	plan, err := config.Load(*configPath, ov, a.lookupEnv)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve: %v\n", err)
		return exitUsage
	}
	reload := &reloadSource{path: *configPath, load: func() (*config.Plan, error) { return config.Load(*configPath, ov, a.lookupEnv) }}
	return a.runService(ctx, plan, newLogger(a.stderr, plan.LogLevel, plan.LogFormat), reload, nil)
}

// newTLS loads a listener's TLS files; nil when it serves plaintext.
func newTLS(t config.TLS, nextProtos []string, logger *slog.Logger) (*tlsfiles.Reloader, error) {
	if !t.On() {
		return nil, nil
	}
	return tlsfiles.New(tlsfiles.Options{
		CertFile: t.CertFile, KeyFile: t.KeyFile, ClientCAFile: t.ClientCAFile, ClientAuth: tlsfiles.ClientAuth(t.ClientAuth),
		NextProtos: nextProtos, Logger: logger,
	})
}

// warnPlaintext logs a warning for a plaintext listener that is not on a
// loopback address: tokens and claims would cross the network in clear.
func warnPlaintext(logger *slog.Logger, what, addr string, tlsOn bool) {
	if tlsOn || isLoopback(addr) {
		return
	}
	logger.Warn("plaintext listener on a non-loopback address: tokens and claims cross the network unencrypted; configure tls/grpc_tls",
		"listener", what, "addr", addr)
}

// warnAdminPlaintext logs a warning for a plaintext admin listener that is
// not on a loopback address and serves the revocations admin API: its
// callers' secrets and its entries (subjects, sessions) would cross the
// network in clear.
func warnAdminPlaintext(logger *slog.Logger, plan *config.Plan, tlsOn bool) {
	if plan.Revocation == nil || plan.AdminListen == "" || tlsOn || isLoopback(plan.AdminListen) {
		return
	}
	logger.Warn("plaintext admin listener on a non-loopback address serves the revocations admin API: its callers' secrets and its entries cross the network unencrypted; configure admin_tls",
		"listener", "admin", "addr", plan.AdminListen)
}

// isLoopback reports whether the host of addr is a loopback address or
// localhost.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// scheme is the URL scheme of the HTTP listener.
func scheme(tlsOn bool) string {
	if tlsOn {
		return "https"
	}
	return "http"
}

// listen opens addr, with a message that says what to do when it is taken.
func listen(addr, what, flagName string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s address %s is already in use (another jwksverify running?); choose another with %s", what, addr, flagName)
	}
	if err != nil {
		return nil, fmt.Errorf("%s listen on %s: %w", what, addr, err)
	}
	return ln, nil
}

// reloadSource is where a served plan comes from again on a reload: its
// file, and the function that loads it.
type reloadSource struct {
	path string
	load func() (*config.Plan, error)
}

// runService wires plan, serves until ctx is done, drains and shuts down.
// onReady, if set, runs once every issuer has its first keys. reload, if
// set, reloads the plan on SIGHUP and when its file changes (watch).
func (a *app) runService(ctx context.Context, plan *config.Plan, logger *slog.Logger, reload *reloadSource, onReady func(ctx context.Context, base string) error) int {
	var hup chan os.Signal
	if reload != nil {
		// SIGHUP means "reload" for the whole run, from before anything
		// is served until the traces are flushed: its default action would
		// end the process, at start, in the middle of a drain or of the
		// flush (only SIGINT and SIGTERM end a drain at once). Signals that
		// come while no reload can start wait in the buffer, or are dropped.
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	tr, err := newTracing(ctx, a.lookupEnv)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve: %v\n", err)
		return exitUsage
	}
	if tr.tracer != nil {
		logger = slog.New(logHandler{logger.Handler()})
	}
	// The spans not yet exported are flushed within what the drain left of
	// shutdown_timeout, so that the process stops within shutdown_delay +
	// shutdown_timeout (CONFIG.md) whatever the collector does; before a
	// drain, within shutdown_timeout.
	var flushBy time.Time
	defer func() { tr.shutdown(logger, flushBy, plan.ShutdownTimeout) }()
	useRedisLog(logger.Handler())
	bi := buildinfo.Read()
	svc, err := service.New(plan, service.Options{Logger: logger, Tracer: tr.tracer, Propagator: tr.propagator(),
		Version: bi.Version, Revision: bi.Revision})
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve: %v\n", err)
		return exitUsage
	}
	defer svc.Close()
	srv, code := a.newServers(svc, plan, logger)
	if srv == nil {
		return code
	}
	code = srv.run(ctx, svc, reload, hup, onReady, logger)
	flushBy = srv.stopBy
	return code
}

// servers are the listeners of a plan and the servers on them; grpc and
// admin are nil when the plan has no such listener.
type servers struct {
	ln, gln, aln net.Listener
	http, admin  *http.Server
	grpc         *grpc.Server
	base         string // the HTTP listener's URL, for a local client
	// stopBy is when the drain's shutdown_timeout ends, once run has
	// drained; zero before.
	stopBy time.Time
}

// newServers loads the TLS files (before any listener opens: a pair that
// does not load is a configuration error), opens the listeners and builds
// the servers of svc on them. On failure it returns nil and the exit
// status, having said why.
func (a *app) newServers(svc *service.Service, plan *config.Plan, logger *slog.Logger) (*servers, int) {
	httpTLS, err := newTLS(plan.TLS, []string{"h2", "http/1.1"}, logger)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve: tls: %v\n", err)
		return nil, exitUsage
	}
	grpcTLS, err := newTLS(plan.GRPCTLS, nil, logger)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve: grpc_tls: %v\n", err)
		return nil, exitUsage
	}
	adminTLS, err := newTLS(plan.AdminTLS, []string{"h2", "http/1.1"}, logger)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve: admin_tls: %v\n", err)
		return nil, exitUsage
	}
	s := &servers{}
	if err := s.listen(plan); err != nil {
		logger.Error("cannot listen", "err", err)
		return nil, exitFailure
	}
	// Coarse deadlines (swept every quarter second) instead of a runtime
	// timer moved four or five times per request: the timeouts are kept,
	// enforced at most a tick late (docs/DECISIONS.md).
	s.ln = deadline.NewListener(s.ln, 0)
	s.http = newHTTPServer(svc.Handler(), plan.HTTP, logger)
	attrs := []any{"http", s.ln.Addr().String(), "tls", httpTLS != nil}
	warnPlaintext(logger, "HTTP", plan.Listen, httpTLS != nil)
	s.base = scheme(httpTLS != nil) + "://" + dialable(s.ln.Addr().String())
	if httpTLS != nil {
		s.ln = tls.NewListener(s.ln, httpTLS.Config())
	}
	if s.gln != nil {
		s.gln = newGRPCListener(s.gln, plan.HTTP.Write)
		gopts := svc.GRPCServerOptions()
		if grpcTLS != nil {
			gopts = append(gopts, grpc.Creds(credentials.NewTLS(grpcTLS.Config())))
		}
		s.grpc = grpc.NewServer(gopts...)
		svc.RegisterGRPC(s.grpc)
		attrs = append(attrs, "grpc", s.gln.Addr().String(), "grpc_tls", grpcTLS != nil)
		warnPlaintext(logger, "gRPC", plan.GRPCListen, grpcTLS != nil)
	}
	if s.aln != nil {
		s.aln = deadline.NewListener(s.aln, 0)
		s.admin = newHTTPServer(svc.AdminHandler(), plan.HTTP, logger)
		attrs = append(attrs, "admin", s.aln.Addr().String(), "admin_tls", adminTLS != nil)
		warnAdminPlaintext(logger, plan, adminTLS != nil)
		if adminTLS != nil {
			s.aln = tls.NewListener(s.aln, adminTLS.Config())
		}
	}
	logger.Info("listening", attrs...)
	return s, exitOK
}

// listen opens the plan's listeners; on failure none stays open.
func (s *servers) listen(plan *config.Plan) error {
	var err error
	if s.ln, err = listen(plan.Listen, "HTTP", "--listen"); err != nil {
		return err
	}
	if plan.GRPCListen != "" {
		if s.gln, err = listen(plan.GRPCListen, "gRPC", "--grpc-listen"); err != nil {
			s.ln.Close()
			return err
		}
	}
	if plan.AdminListen != "" {
		if s.aln, err = listen(plan.AdminListen, "admin", "admin_listen"); err != nil {
			s.ln.Close()
			if s.gln != nil {
				s.gln.Close()
			}
			return err
		}
	}
	return nil
}

// grpcListener is the gRPC listener: it bounds its connections' writes
// as HTTP2Config.WriteByteTimeout bounds the HTTP listener's HTTP/2 ones (a
// write that makes no progress for the write timeout closes the
// connection).
//
// grpc-go has no write timeout: a client that stopped reading blocked its
// connection's writer for good, the streams it had been answered on were
// never cleaned up (so MaxConnectionIdle never started), and the connection
// held its goroutines and every answer queued behind the blocked write for
// as long as the client kept the socket (reading a little now and then kept
// the kernel's TCP_USER_TIMEOUT, which grpc-go sets, away). The deadlines
// are the coarse ones of the HTTP listener (docs/DECISIONS.md).
//
// It also closes, for the drain, every connection it accepted
// ([grpcListener.closeConns]): grpc-go's Stop waits for every handshake in
// progress, which ends only at ConnectionTimeout, so a client that
// connected and never sent its preface held the drain past
// shutdown_timeout.
type grpcListener struct {
	net.Listener
	write time.Duration // zero: writes unbounded
	mu    sync.Mutex
	conns map[*grpcConn]struct{} // accepted, not closed
}

// newGRPCListener wraps ln, its writes bounded by write (zero: unbounded).
func newGRPCListener(ln net.Listener, write time.Duration) *grpcListener {
	return &grpcListener{Listener: deadline.NewListener(userTimeoutListener{ln}, 0), write: write, conns: map[*grpcConn]struct{}{}}
}

// userTimeoutListener sets TCP_USER_TIMEOUT on the TCP connections it
// accepts, to grpc-go's keepalive timeout, which grpc-go sets only on a
// *net.TCPConn (a peer gone with answers unacknowledged is dropped then,
// not after the kernel's retries, about 15 minutes).
type userTimeoutListener struct{ net.Listener }

// grpcUserTimeout is grpc-go's default keepalive timeout, which it gives
// TCP_USER_TIMEOUT.
const grpcUserTimeout = 20 * time.Second

// Accept returns the next connection, with TCP_USER_TIMEOUT set.
func (l userTimeoutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		setUserTimeout(c, grpcUserTimeout)
	}
	return c, err
}

// Accept returns the next connection.
func (l *grpcListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &grpcConn{Conn: nc, l: l}
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	return c, nil
}

// closeConns closes every connection accepted and not closed yet.
func (l *grpcListener) closeConns() {
	l.mu.Lock()
	conns := make([]*grpcConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// grpcConn is a connection of a [grpcListener].
type grpcConn struct {
	net.Conn
	l *grpcListener
	// wd is the write deadline its user set (grpc-go's handshake bound,
	// tls.Conn's close_notify bound) in unix nanoseconds, 0 for none: a
	// write is bounded by it too.
	wd atomic.Int64
}

// Close closes the connection and forgets it.
func (c *grpcConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// SetDeadline sets both deadlines, the write one kept for [grpcConn.Write].
func (c *grpcConn) SetDeadline(t time.Time) error {
	c.wd.Store(unixNano(t))
	return c.Conn.SetDeadline(t)
}

// SetWriteDeadline sets the write deadline, kept for [grpcConn.Write].
func (c *grpcConn) SetWriteDeadline(t time.Time) error {
	c.wd.Store(unixNano(t))
	return c.Conn.SetWriteDeadline(t)
}

// Write writes p, each attempt bounded by the write timeout and by the
// user's write deadline: an attempt that wrote part of p within the write
// timeout is followed by another for the rest; one that wrote nothing
// closes the connection (grpc-go's reader then ends the transport, which an
// error of its writer alone does not). The user's deadline, when it passes,
// fails the write as it would have without the bound.
func (c *grpcConn) Write(p []byte) (int, error) {
	if c.l.write <= 0 {
		return c.Conn.Write(p)
	}
	n := 0
	for {
		user := c.wd.Load()
		dl := time.Now().Add(c.l.write)
		own := user == 0 || dl.UnixNano() < user
		if !own {
			dl = time.Unix(0, user)
		}
		_ = c.Conn.SetWriteDeadline(dl)
		m, err := c.Conn.Write(p[n:])
		n += m
		if err == nil || !own || !errors.Is(err, os.ErrDeadlineExceeded) {
			_ = c.Conn.SetWriteDeadline(deadlineAt(user))
			return n, err
		}
		if m == 0 {
			c.Close()
			return n, err
		}
	}
}

// unixNano is t in unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// deadlineAt is the deadline of unix nanoseconds n, the zero time for 0.
func deadlineAt(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// limitedHandler is h holding net/http's own server errors (a failed TLS
// handshake: one a connection an unauthenticated client opens and drops)
// to loglimit.DefaultRate lines a second, with a summary of the rest.
func limitedHandler(h slog.Handler) slog.Handler {
	return &rateLimited{Handler: h, lim: loglimit.New(loglimit.DefaultRate, "server errors not logged"), log: slog.New(h)}
}

type rateLimited struct {
	slog.Handler
	lim *loglimit.Limiter
	log *slog.Logger
}

func (h *rateLimited) Handle(ctx context.Context, r slog.Record) error {
	if !h.lim.Allow(ctx, h.log, r.Level, r.Time) {
		return nil
	}
	if len(r.Message) > maxServerErrorLine {
		// crypto/tls quotes every ALPN protocol a failed ClientHello
		// offered: up to 64 KiB the client chose, four times that quoted.
		r.Message = textclip.Clip(r.Message, maxServerErrorLine) + "…"
	}
	return h.Handler.Handle(ctx, r)
}

// maxServerErrorLine bounds the message of a net/http server error line:
// its text can quote what an unauthenticated client sent.
const maxServerErrorLine = 1024

// newHTTPServer is an HTTP server of h with the plan's timeouts t.
func newHTTPServer(h http.Handler, t config.Timeouts, logger *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    maxHeaderBytes,
		// OPTIONS * is the handler's to answer, as every other request
		// is: net/http's own answer is a 200 outside the API, without
		// Cache-Control: no-store, never counted or logged.
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(limitedHandler(logger.Handler()), slog.LevelWarn),
		// HTTP/2 (ALPN h2 on the TLS listener) sets no deadline on the
		// connection: a stream's write timeout queues a RST_STREAM behind
		// a write blocked on a client that never reads, so the streams,
		// their handlers and the connection were held for as long as the
		// client kept the socket. A write that makes no progress for the
		// write timeout closes the connection, as over HTTP/1.1.
		HTTP2: &http.HTTP2Config{WriteByteTimeout: t.Write},
	}
	fresh := new(freshConns)
	srv.ConnState = fresh.track
	srv.RegisterOnShutdown(fresh.close)
	return srv
}

// run serves until ctx is done or a server fails, then drains; it returns
// the exit status.
func (s *servers) run(ctx context.Context, svc *service.Service, reload *reloadSource, hup <-chan os.Signal, onReady func(ctx context.Context, base string) error, logger *slog.Logger) int {
	g, gctx := errgroup.WithContext(ctx)
	serveHTTP := func(srv *http.Server, ln net.Listener, what string) func() error {
		return func() error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		}
	}
	g.Go(serveHTTP(s.http, s.ln, "HTTP server"))
	if s.admin != nil {
		g.Go(serveHTTP(s.admin, s.aln, "admin HTTP server"))
	}
	if s.grpc != nil {
		g.Go(func() error {
			if err := s.grpc.Serve(s.gln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				return fmt.Errorf("gRPC server: %w", err)
			}
			return nil
		})
	}
	if onReady != nil {
		g.Go(func() error {
			if svc.Ready(gctx) != nil { // the listener is open: ready with the keys
				return nil // stopping: not a failure of its own
			}
			return onReady(gctx, s.base)
		})
	}
	if reload != nil {
		g.Go(func() error {
			watch(gctx, svc, reload.path, reload.load, hup, logger)
			return nil
		})
	}
	var drainErr error
	g.Go(func() error {
		<-gctx.Done()
		var closeGRPC func()
		if gl, ok := s.gln.(*grpcListener); ok {
			closeGRPC = gl.closeConns
		}
		s.stopBy, drainErr = drain(svc.Drain(), ctx.Err() != nil, s.http, s.admin, s.grpc, closeGRPC, logger)
		return nil
	})
	code := exitOK
	if err := g.Wait(); err != nil {
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

// drain stops the servers of plan, whose service is draining
// (service.Drain): it has already told load balancers and Envoy:
// /readyz answers 503 draining, gRPC health NOT_SERVING (open Watch streams
// end), and every HTTP answer closes its connection; every request is still
// served. After shutdown_delay, and at least drainGrace (on a signal only: a
// failed server has nothing to wait for), it stops accepting, closes the idle
// connections and lets what is in flight finish within shutdown_timeout.
//
// Once shutdown_timeout passed, closeGRPC (if set) closes every connection
// of the gRPC listener before grpc-go's Stop: Stop first waits for the
// handshakes in progress, which only the handshake timeout would end.
//
// It returns the end of shutdown_timeout (the deadline it drained by) and
// the drain's error.
func drain(plan *config.Plan, signalled bool, httpSrv, adminSrv *http.Server, grpcSrv *grpc.Server, closeGRPC func(), logger *slog.Logger) (time.Time, error) {
	logger.Info("shutting down", "delay", plan.ShutdownDelay.String(), "timeout", plan.ShutdownTimeout.String())
	if signalled {
		time.Sleep(max(plan.ShutdownDelay, drainGrace)) // a second signal ends the process at once (main)
	}
	stopBy := time.Now().Add(plan.ShutdownTimeout)
	sctx, cancel := context.WithDeadline(context.Background(), stopBy)
	defer cancel()
	var wg sync.WaitGroup
	if grpcSrv != nil {
		wg.Go(func() {
			stop := context.AfterFunc(sctx, func() {
				if closeGRPC != nil {
					closeGRPC()
				}
				grpcSrv.Stop()
			})
			defer stop()
			grpcSrv.GracefulStop()
		})
	}
	if adminSrv != nil {
		// Probes and scrapers need no drain: the admin listener stops with
		// the rest.
		wg.Go(func() {
			if adminSrv.Shutdown(sctx) != nil {
				adminSrv.Close()
			}
		})
	}
	var err error
	if err = httpSrv.Shutdown(sctx); err != nil {
		httpSrv.Close()
		err = fmt.Errorf("draining HTTP requests: %w", err)
	}
	wg.Wait()
	if sctx.Err() != nil && err == nil {
		err = errors.New("draining gRPC calls: shutdown_timeout passed")
	}
	return stopBy, err
}

// freshConns are the HTTP connections that have not sent a request yet. The
// drain closes them with the idle ones: net/http's Shutdown would wait up to
// 5s for each (clients open connections they may never use). track runs
// twice per request (active, idle); n counts the fresh connections so that,
// when there are none (keep-alive traffic), it costs one atomic load and no
// map lookup. A connection's own transitions follow its StateNew, which
// counted it, so it is never skipped while fresh.
type freshConns struct {
	m sync.Map
	n atomic.Int64
}

func (f *freshConns) track(c net.Conn, st http.ConnState) {
	if st == http.StateNew {
		f.m.Store(c, nil)
		f.n.Add(1)
		return
	}
	if f.n.Load() == 0 {
		return
	}
	if _, ok := f.m.LoadAndDelete(c); ok {
		f.n.Add(-1)
	}
}

func (f *freshConns) close() {
	f.m.Range(func(c, _ any) bool {
		c.(net.Conn).Close()
		return true
	})
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
