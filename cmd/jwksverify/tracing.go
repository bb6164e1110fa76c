package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/jwksverify/jwksverify/cmd/jwksverify/internal/buildinfo"
)

// tracerName names the instrumentation scope of every span.
const tracerName = "github.com/jwksverify/jwksverify"

// tracing is the process's OpenTelemetry tracer provider, or none.
type tracing struct {
	tp     *sdktrace.TracerProvider // nil: tracing is off
	tracer trace.Tracer             // nil: off (the libraries then record nothing, at no cost)
}

// newTracing configures tracing from the standard OTEL_* variables, read
// through env: off unless OTEL_TRACES_EXPORTER is "otlp" or an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and always off with
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. The protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL
// (http/protobuf, the default, or grpc). The exporter and the SDK read the
// rest themselves from the process environment: endpoint, headers (which
// checkOTLPHeaders reads first: a malformed entry is refused here, never
// printed by the exporter), timeouts, TLS, the batch processor (OTEL_BSP_*),
// the resource
// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES; service.name defaults to
// jwksverify). The sampler (OTEL_TRACES_SAMPLER, _ARG: default
// parentbased_always_on) is read here (samplerFromEnv): one the SDK would
// not read is refused, where the SDK sampled every request instead.
func newTracing(ctx context.Context, env func(string) (string, bool)) (*tracing, error) {
	get := func(k string) string { v, _ := env(k); return strings.TrimSpace(v) }
	exp := strings.ToLower(get("OTEL_TRACES_EXPORTER"))
	switch {
	case strings.EqualFold(get("OTEL_SDK_DISABLED"), "true"), exp == "none":
		return &tracing{}, nil
	case exp != "" && exp != "otlp":
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not supported; use otlp or none", exp)
	case exp == "" && get("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "":
		return &tracing{}, nil
	}
	// The exporter and the SDK read these themselves, and on a value they
	// cannot read carry on without it, with a line on stderr: a header
	// entry dropped (the line quoting it, the collector's credential), a
	// sampler replaced by one that samples every request. Refused here,
	// before they read them.
	for _, k := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if err := checkOTLPHeaders(get(k)); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	sampler, err := samplerFromEnv(get)
	if err != nil {
		return nil, err
	}
	proto := get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = get("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exporter sdktrace.SpanExporter
	switch proto {
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not supported; use http/protobuf or grpc", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// The environment's resource (OTEL_SERVICE_NAME, ...) wins over ours.
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", "jwksverify"), attribute.String("service.version", buildinfo.Read().Version)),
		resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("OTEL resource: %w", err)
	}
	popts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exporter), sdktrace.WithResource(res)}
	if sampler != nil {
		popts = append(popts, sdktrace.WithSampler(sampler))
	}
	tp := sdktrace.NewTracerProvider(popts...)
	return &tracing{tp: tp, tracer: tp.Tracer(tracerName, trace.WithInstrumentationVersion(buildinfo.Read().Version))}, nil
}

// checkOTLPHeaders checks an OTEL_EXPORTER_OTLP_(TRACES_)HEADERS value as
// the OTLP exporters read it (comma-separated name=value, the value
// URL-encoded), without quoting it: a value is a credential.
func checkOTLPHeaders(v string) error {
	if v == "" {
		return nil
	}
	for i, entry := range strings.Split(v, ",") {
		name, value, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		switch {
		case !ok:
			return fmt.Errorf("entry %d is not name=value (the value is not shown)", i+1)
		case !validHeaderName(name):
			return fmt.Errorf("entry %d: the name is not an HTTP header name (the value is not shown)", i+1)
		}
		if _, err := url.PathUnescape(value); err != nil {
			return fmt.Errorf("entry %d: the value is not URL-encoded: a %% must start an escape such as %%25 (the value is not shown)", i+1)
		}
	}
	return nil
}

// validHeaderName reports whether s is an RFC 9110 token, the header
// names the exporters accept.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c > 0x7e || c <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c) {
			return false
		}
	}
	return true
}

// samplerFromEnv reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as
// the SDK does, except that a value it cannot read is an error (the SDK
// then samples every request): nil when the variable is not set (the SDK's
// default, parentbased_always_on).
func samplerFromEnv(get func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(get("OTEL_TRACES_SAMPLER"))
	arg := get("OTEL_TRACES_SAMPLER_ARG")
	ratio := func() (sdktrace.Sampler, error) {
		if arg == "" {
			return sdktrace.TraceIDRatioBased(1), nil
		}
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: %q is not a ratio between 0 and 1 (e.g. 0.01 for 1%%)", arg)
		}
		return sdktrace.TraceIDRatioBased(f), nil
	}
	switch name {
	case "":
		return nil, nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio":
		return ratio()
	case "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(r), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER: %q is not supported; use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio", name)
}

// propagator is how the trace context of a request is read: W3C Trace
// Context.
func (t *tracing) propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// shutdown flushes the spans not yet exported, by the deadline by, or
// within timeout when by is zero. A deadline already past drops them.
func (t *tracing) shutdown(logger *slog.Logger, by time.Time, timeout time.Duration) {
	if t.tp == nil {
		return
	}
	if by.IsZero() {
		by = time.Now().Add(timeout)
	}
	ctx, cancel := context.WithDeadline(context.Background(), by)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		logger.Warn("flushing traces", "err", err)
	}
}

// logHandler adds trace_id and span_id to every log line written in the
// context of a recorded span.
type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(as)}
}

func (h logHandler) WithGroup(name string) slog.Handler { return logHandler{h.Handler.WithGroup(name)} }
