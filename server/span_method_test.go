package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestServerSpanMethodBounded: the server span's name and its
// http.request.method attribute are taken from r.Method as the client
// sent it. Any HTTP token is a method net/http accepts, up to the header
// bound: a client makes span names (which trace backends group by) and
// attribute values of its own, unbounded in number and length — a JWT
// is all token characters, so a token sent as the method lands in the
// trace. OpenTelemetry's HTTP conventions name such a method "_OTHER"
// and the span "HTTP" (or by route alone).
func TestServerSpanMethodBounded(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEnv(t, envConfig{tracer: tp.Tracer("test")})
	tok := mint(claims(nil))
	for _, m := range []string{tok, "X" + strings.Repeat("A", 4000), "RANDOM-1", "RANDOM-2"} {
		r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		r.Method = m
		do(e.handler, r)
	}
	names := map[string]bool{}
	for _, s := range rec.Ended() {
		if s.SpanKind().String() != "server" {
			continue
		}
		names[s.Name()] = true
		if strings.Contains(s.Name(), tok) || len(s.Name()) > 64 {
			t.Errorf("span name holds the client's method: %.80q… (%d bytes)", s.Name(), len(s.Name()))
		}
		for _, a := range s.Attributes() {
			if v := a.Value.String(); strings.Contains(v, tok) || len(v) > 64 {
				t.Errorf("attribute %s holds the client's method: %.80q… (%d bytes)", a.Key, v, len(v))
			}
		}
	}
	if len(names) > 1 {
		t.Errorf("4 requests of made-up methods made %d server span names: %d", len(names), len(names))
	}
}
