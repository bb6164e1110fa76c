package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// reusedWriter is a ResponseWriter reused across iterations (an
// httptest.ResponseRecorder cannot be reset): the allocations reported are
// the handler's, not the recorder's.
type reusedWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *reusedWriter) Header() http.Header         { return w.h }
func (w *reusedWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
func (w *reusedWriter) WriteHeader(code int)        { w.code = code }

func (w *reusedWriter) reset() { clear(w.h); w.code, w.n = 0, 0 }

// BenchmarkAuthz measures the /v1/authz handler path (Handler().ServeHTTP,
// the request and writer reused) against a bare handler that only looks at
// Authorization: a repeated token (cached verdict), a token verified every
// time (token cache off), and a denied one. The allocations are
// deterministic: the cached path allocates nothing.
func BenchmarkAuthz(b *testing.B) {
	toks := tokens()
	bench := func(b *testing.B, h http.Handler, tok string, want int) {
		r := httptest.NewRequest(http.MethodGet, "/v1/authz/app", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := &reusedWriter{h: make(http.Header)}
		b.ReportAllocs()
		for b.Loop() {
			w.reset()
			h.ServeHTTP(w, r)
			if w.code != want {
				b.Fatalf("status = %d, want %d", w.code, want)
			}
		}
	}
	quiet := func(e *env) http.Handler { e.srv.log = slog.New(slog.DiscardHandler); return e.handler }
	b.Run("bare", func(b *testing.B) {
		bench(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.WriteHeader(http.StatusOK)
		}), toks["valid"], http.StatusOK)
	})
	b.Run("cached", func(b *testing.B) {
		bench(b, quiet(newEnv(b, envConfig{tokenCache: 1000})), toks["valid"], http.StatusOK)
	})
	b.Run("cached-shared", func(b *testing.B) {
		// The token cache as cmd builds it: shared across reloads.
		bench(b, quiet(newEnv(b, envConfig{tokenCache: 1000, sharedCache: true})), toks["valid"], http.StatusOK)
	})
	b.Run("uncached", func(b *testing.B) { bench(b, quiet(newEnv(b, envConfig{})), toks["valid"], http.StatusOK) })
	b.Run("denied", func(b *testing.B) { bench(b, quiet(newEnv(b, envConfig{})), toks["expired"], http.StatusUnauthorized) })
}

// BenchmarkAuthzTracing is the cached /v1/authz path of cmd (shared token
// cache) with tracing off (no tracer: the libraries record nothing), and
// with an SDK tracer provider sampling 1% of root spans (its spans go to a
// batch processor over an exporter that drops them: the cost measured is
// the instrumentation's and the SDK's, not an exporter's I/O).
func BenchmarkAuthzTracing(b *testing.B) {
	toks := tokens()
	run := func(b *testing.B, tracer trace.Tracer) {
		e := newEnv(b, envConfig{tokenCache: 1000, sharedCache: true, tracer: tracer})
		e.srv.log = slog.New(slog.DiscardHandler)
		r := httptest.NewRequest(http.MethodGet, "/v1/authz/app", nil)
		r.Header.Set("Authorization", "Bearer "+toks["valid"])
		w := &reusedWriter{h: make(http.Header)}
		b.ReportAllocs()
		for b.Loop() {
			w.reset()
			e.srv.Handler().ServeHTTP(w, r)
			if w.code != http.StatusOK {
				b.Fatalf("status = %d", w.code)
			}
		}
	}
	b.Run("off", func(b *testing.B) { run(b, nil) })
	b.Run("sampled-1pct", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))),
			sdktrace.WithBatcher(discardExporter{}))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		run(b, tp.Tracer("bench"))
	})
}

// discardExporter drops every span.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }
