package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/revoke"
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
	// A cached token behind nginx: without policies (the original request
	// not read), and with the routes of newPolicyEnv choosing orders-read
	// (a scopes policy) for GET /orders/1. Their difference is what
	// choosing and running a policy adds to a request.
	behindNginx := func(b *testing.B, h http.Handler) {
		r := nginxAuthz("GET", "/orders/1", toks["valid"], nil)
		w := &reusedWriter{h: make(http.Header)}
		b.ReportAllocs()
		for b.Loop() {
			w.reset()
			h.ServeHTTP(w, r)
			if w.code != http.StatusOK {
				b.Fatalf("status = %d, want 200", w.code)
			}
		}
	}
	b.Run("cached-nginx", func(b *testing.B) {
		behindNginx(b, quiet(newEnv(b, envConfig{tokenCache: 1000, proxy: request.Nginx})))
	})
	b.Run("cached-policy", func(b *testing.B) { behindNginx(b, quiet(newPolicyEnv(b, nil))) })
	// cached-policy whose policy mints (orders-read, ES256): the minted
	// token comes from the minter's cache. Its difference from
	// cached-policy is what a cache hit of minting adds (target: ≤ 0.5 µs,
	// 0 allocations).
	b.Run("cached-mint", func(b *testing.B) {
		e, _ := newMintEnv(b, nil, nil)
		behindNginx(b, quiet(e))
	})
	// A cached token with sid, client_id and azp, without and with a
	// memory revocation store holding an entry of every kind for its
	// issuer, none naming it: their difference is what the revocation
	// stage adds to a token-cache hit.
	withSession := mint(claims(map[string]any{"sid": "session-1", "client_id": "web", "azp": "web"}))
	b.Run("cached-session", func(b *testing.B) {
		bench(b, quiet(newEnv(b, envConfig{tokenCache: 1000})), withSession, http.StatusOK)
	})
	b.Run("cached-revocation", func(b *testing.B) {
		e := newEnv(b, envConfig{tokenCache: 1000, revocations: true})
		for i, k := range revoke.Kinds() {
			ent := revoke.Entry{Issuer: issuerA, Kind: k, Value: fmt.Sprint("other-", i)}
			if k == revoke.KindIssuer {
				ent.Issuer, ent.Value = "https://other.example/", ""
			}
			if _, err := e.revocations.Add(context.Background(), ent); err != nil {
				b.Fatal(err)
			}
		}
		bench(b, quiet(e), withSession, http.StatusOK)
	})
	b.Run("uncached", func(b *testing.B) { bench(b, quiet(newEnv(b, envConfig{})), toks["valid"], http.StatusOK) })
	b.Run("denied", func(b *testing.B) { bench(b, quiet(newEnv(b, envConfig{})), toks["expired"], http.StatusUnauthorized) })
	// Logged rejections past log.rejections_per_second: the rate limiter's
	// path (nearly every line dropped and counted for the summary).
	b.Run("denied-rate-limited", func(b *testing.B) {
		e := newEnv(b, envConfig{})
		e.srv.log = slog.New(slog.NewJSONHandler(io.Discard, nil))
		bench(b, e.handler, toks["expired"], http.StatusUnauthorized)
	})
}

// BenchmarkAuthzOverTLS is forward-auth with a cached token over real
// loopback connections, kept alive (handshakes amortized): plaintext beside
// TLS 1.3 (ECDSA P-256 certificate), so that their ratio is what TLS costs
// the hot path. Parallel clients, one connection each.
func BenchmarkAuthzOverTLS(b *testing.B) {
	tok := tokens()["valid"]
	for _, mode := range []string{"plain", "tls"} {
		b.Run(mode, func(b *testing.B) {
			e := newEnv(b, envConfig{})
			e.srv.log = slog.New(slog.DiscardHandler)
			ts := httptest.NewUnstartedServer(e.handler)
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			if mode == "tls" {
				ca := testkeys.NewCA("bench CA")
				certPEM, keyPEM := ca.Issue("bench", false)
				pair, err := tls.X509KeyPair(certPEM, keyPEM)
				if err != nil {
					b.Fatal(err)
				}
				ts.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
				ts.StartTLS()
				tr.TLSClientConfig = &tls.Config{RootCAs: ca.Pool}
			} else {
				ts.Start()
			}
			defer ts.Close()
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			url := ts.URL + "/v1/authz/app"
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				for pb.Next() {
					resp, err := c.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status = %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
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
