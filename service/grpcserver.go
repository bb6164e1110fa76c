package service

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/textclip"
)

// MaxHeaderBytes bounds a request's headers on the HTTP listener of
// `jwksverify serve` (http.Server.MaxHeaderBytes) and a call's metadata on
// its gRPC listener ([Service.GRPCServerOptions]).
const MaxHeaderBytes = 64 << 10

// GRPCServerOptions returns the options `jwksverify serve` builds its gRPC
// listener with, from the service's plan as it is now: a message at most
// limits.max_body_bytes (RESOURCE_EXHAUSTED past it, before it is decoded),
// a call's metadata at most [MaxHeaderBytes], a call at most the read
// timeout, the HTTP/2 handshake within the read-header timeout, an idle
// connection closed after the idle timeout, at most 1000 streams a
// connection, and a streaming handler's panic answered INTERNAL. A
// grpc.Server built without them takes grpc-go's defaults: a 4 MiB message,
// 16 MiB of metadata, no bound on a call or an idle connection. Add
// transport credentials to them; a unary interceptor added to them makes
// every cached Check be copied and encoded again (see [Service.RegisterGRPC]).
// A reload does not change a running grpc.Server's options: they are read
// when it is built, as the binary's listeners are.
func (s *Service) GRPCServerOptions() []grpc.ServerOption {
	return grpcServerOptions(int(s.Server().MaxBodyBytes()), s.Plan().HTTP, s.opts.Logger)
}

// grpcMaxStreams bounds the concurrent streams of one gRPC connection:
// Envoy opens another connection past it.
const grpcMaxStreams = 1000

// grpcServerOptions bounds the gRPC server as the HTTP one is bounded: a
// message at most maxMsg bytes, a connection idle for t.Idle closed (an
// idle or silent connection was held forever: grpc-go's default), the
// handshake within t.ReadHeader, at most grpcMaxStreams streams a
// connection (grpc-go's default is unlimited), and a call's metadata at
// most MaxHeaderBytes.
func grpcServerOptions(maxMsg int, t config.Timeouts, logger *slog.Logger) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMsg),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: t.Idle}),
		grpc.ConnectionTimeout(t.ReadHeader),
		grpc.MaxConcurrentStreams(grpcMaxStreams),
		// A call's metadata bounded as the HTTP listener's headers are
		// (grpc-go's default is 16 MiB a stream).
		grpc.MaxHeaderListSize(MaxHeaderBytes),
		// A call bounded as an HTTP request is by the read timeout: a
		// stream whose request message never comes (never half-closed)
		// held its handler goroutine for as long as the connection lived
		// (grpc-go has no per-call bound, and MaxConnectionIdle counts
		// only a connection without streams). A health Watch is bounded
		// only until its request came.
		grpc.InTapHandle(callDeadline(t.Read)),
		// A handler's panic ends its call (INTERNAL, and Envoy's
		// status_on_error), not the process: net/http recovers a handler's
		// panic the same way, and grpc-go does not. A unary handler
		// recovers its own ([recovering]): no unary interceptor here.
		grpc.ChainStreamInterceptor(recoverStream(logger), watchRequestBound),
	}
}

// recovering registers services on g with every unary method's handler
// answering its panic with codes.Internal, logged ([logPanic]);
// [Service.RegisterGRPC] registers through it. It recovers in the
// handlers, not in a unary interceptor on the server: behind one, extauthz
// hands each Check its own copy of a shared answer (an interceptor may
// edit it) and encodes it for every call, where without one a cached
// token's answer goes out as its encoding, made once (issue 31's gRPC item:
// a Check twice as long). grpcServerOptions installs none.
type recovering struct {
	g      grpc.ServiceRegistrar
	logger *slog.Logger
}

// RegisterService implements grpc.ServiceRegistrar.
func (r recovering) RegisterService(desc *grpc.ServiceDesc, impl any) {
	d := *desc
	d.Methods = slices.Clone(desc.Methods)
	for i := range d.Methods {
		h, method := d.Methods[i].Handler, "/"+desc.ServiceName+"/"+d.Methods[i].MethodName
		d.Methods[i].Handler = func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (resp any, err error) {
			defer func() {
				if p := recover(); p != nil {
					logPanic(r.logger, method, p)
					resp, err = nil, status.Error(codes.Internal, "internal error")
				}
			}()
			return h(srv, ctx, dec, ic)
		}
	}
	r.g.RegisterService(&d, impl)
}

// recoverStream answers a streaming handler's panic (health Watch) with
// codes.Internal and logs it ([logPanic]).
func recoverStream(logger *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				logPanic(logger, info.FullMethod, r)
				err = status.Error(codes.Internal, "internal error")
			}
		}()
		return h(srv, ss)
	}
}

// maxPanicText bounds the panic value and the stack a panic's log line
// holds.
const maxPanicText = 4 << 10

// logPanic logs a gRPC handler's panic with its method, value and stack,
// each clipped to maxPanicText.
func logPanic(logger *slog.Logger, method string, r any) {
	logger.Error("gRPC call panicked; answered INTERNAL", "method", method,
		"panic", textclip.Clip(fmt.Sprint(r), maxPanicText), "stack", textclip.Clip(string(debug.Stack()), maxPanicText))
}

// healthWatch is the one server-streaming method the gRPC listener serves:
// its stream lives as long as its client watches.
const healthWatch = "/grpc.health.v1.Health/Watch"

// callDeadline gives every call but a health Watch at most d (zero: no
// bound), a shorter deadline of the client's own kept. A health Watch gets
// d for its request message only ([watchRequestCtx]).
func callDeadline(d time.Duration) tap.ServerInHandle {
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		if d <= 0 {
			return ctx, nil
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
			return ctx, nil
		}
		if info.FullMethodName == healthWatch {
			return newWatchRequestCtx(ctx, d), nil
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		_ = cancel // the stream's own context, this one's parent, is cancelled when the stream ends
		return ctx, nil
	}
}

// watchRequestCtx is a health Watch's stream context while its request is
// awaited: cancelled, its Err DeadlineExceeded, after the read timeout unless
// [watchRequestBound] stops its timer when the request came. The context
// callDeadline returns becomes the stream's, and grpc-go's read of the
// request message waits on it (there is no other way to end that wait: a
// context derived in the handler is not the one the read waits on), then
// writes the status of its Err: DeadlineExceeded, as a unary call past its
// deadline ends. The handler goroutine then returns; no other goroutine is
// involved (the timer's function only cancels). A context derived from it
// before the timer fired reports Canceled, not DeadlineExceeded.
type watchRequestCtx struct {
	context.Context // cancelled by the timer, with DeadlineExceeded as its cause
	timer           *time.Timer
}

// watchRequestKey is the context key of a *watchRequestCtx.
type watchRequestKey struct{}

// newWatchRequestCtx returns the context of a health Watch whose request is
// awaited for at most d.
func newWatchRequestCtx(parent context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	c := &watchRequestCtx{Context: ctx}
	c.timer = time.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return c
}

// Err is DeadlineExceeded when the timer cancelled the context first, the
// parent's error when the client's cancel came first: the cause of the
// first cancellation, which never changes after.
func (c *watchRequestCtx) Err() error {
	if c.Context.Err() == nil {
		return nil
	}
	return context.Cause(c.Context)
}

// Value returns c itself for watchRequestKey.
func (c *watchRequestCtx) Value(key any) any {
	if key == (watchRequestKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// watchRequestBound stops a health Watch's request timer once its request
// message came (the Watch then lives as long as its client watches), and
// ends a Watch whose request did not come in time with DeadlineExceeded: the
// generated handler blocks reading the request before Watch runs, so a
// client that opened a Watch and never sent it held the handler goroutine
// for the connection's life.
func watchRequestBound(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	c, ok := ss.Context().Value(watchRequestKey{}).(*watchRequestCtx)
	if !ok {
		return handler(srv, ss)
	}
	w := &watchStream{ServerStream: ss, timer: c.timer}
	err := handler(srv, w)
	if !w.received && !c.timer.Stop() {
		return errWatchRequestTimeout
	}
	return err
}

// errWatchRequestTimeout ends a health Watch whose request did not come
// within the read timeout: the status grpc-go writes for a call past its
// deadline.
var errWatchRequestTimeout = status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())

// watchStream is a health Watch's stream until its request came.
type watchStream struct {
	grpc.ServerStream
	timer    *time.Timer
	received bool // the first RecvMsg returned
}

// RecvMsg reads m; the first read stops the request timer, and fails when
// the timer fired first (the stream's context is cancelled then).
func (s *watchStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if s.received {
		return err
	}
	s.received = true
	if !s.timer.Stop() {
		return errWatchRequestTimeout
	}
	return err
}
