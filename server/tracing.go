package server

import (
	"context"
	"net/http"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// StartSpan starts a span named name, a child of the span in ctx, or, when
// carrier is not nil, of the remote trace context it carries (a request's
// traceparent: then the span is a server span). It is the one hook through
// which every step of a request is traced: the front ends' server spans,
// and the steps the server runs besides verifying (policy evaluation,
// introspection calls: StartSpan(ctx, nil, "policy")). Without
// [Options.Tracer] it returns ctx and a span that records nothing, at no
// cost. The caller ends the span; its attributes must never hold a token,
// claims or secrets.
func (s *Server) StartSpan(ctx context.Context, carrier propagation.TextMapCarrier, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	kind := trace.SpanKindInternal
	if carrier != nil {
		ctx = s.propagator.Extract(ctx, carrier)
		kind = trace.SpanKindServer
	}
	return s.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Tracing reports whether the server records spans ([Options.Tracer]).
func (s *Server) Tracing() bool { return s.tracer != nil }

// traced wraps h in a server span per request, named by its route (the
// method and the endpoint's path: never the original request's path or
// query, which may carry a token), with the response's status.
func (s *Server) traced(h http.Handler) http.Handler {
	paths := make([]string, 0, 8)
	for _, rt := range s.routeTable() {
		paths = append(paths, rt.path)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := "other"
		switch {
		case isAuthzPath(r.URL.Path):
			route = authzPath
		case slices.Contains(paths, r.URL.Path):
			route = r.URL.Path
		}
		method := spanMethod(r.Method)
		ctx, span := s.StartSpan(r.Context(), propagation.HeaderCarrier(r.Header), method+" "+route,
			attribute.String("http.request.method", method), attribute.String("http.route", route))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// spanMethod is the method a span names: one of HTTP's, else "_OTHER"
// (OpenTelemetry's HTTP conventions). The client chooses the method: any
// token, of any length (a JWT is all token characters), would otherwise
// become a span name and an attribute value of its own.
func spanMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// statusWriter records the status a handler writes.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
