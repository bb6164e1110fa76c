package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"go.opentelemetry.io/otel"
)

// captureOTelLog routes the OpenTelemetry SDK's own diagnostics (which go
// to stderr, outside the service's logger) into a buffer for the test.
func captureOTelLog(t *testing.T) func() string {
	t.Helper()
	var (
		mu  sync.Mutex
		out strings.Builder
	)
	otel.SetLogger(funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		out.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{}))
	t.Cleanup(func() { otel.SetLogger(funcr.New(func(string, string) {}, funcr.Options{})) })
	return func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
}

// tracingEnv sets the process environment (the OTLP exporter and the SDK
// read it themselves) and returns the lookup newTracing reads it through.
func tracingEnv(t *testing.T, kv map[string]string) func(string) (string, bool) {
	t.Helper()
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for k, v := range kv {
		t.Setenv(k, v)
	}
	return os.LookupEnv
}

func shutdownTracing(t *testing.T, tr *tracing) {
	t.Helper()
	if tr != nil {
		tr.shutdown(slog.New(slog.NewTextHandler(io.Discard, nil)), time.Time{}, 5*time.Second)
	}
}

// A malformed OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, typically written the
// way HTTP writes a header ("Authorization: Bearer ..."), is a start-up
// error that does not quote the value: the exporter would otherwise print
// the whole entry, the collector's credential, to stderr, and export
// without it.
func TestTracingHeadersEnvRefusedWithoutEcho(t *testing.T) {
	const secret = "s3cr3t-collector-key"
	tests := []struct{ name, variable, value string }{
		{"colon", "OTEL_EXPORTER_OTLP_HEADERS", "Authorization: Bearer " + secret},
		{"colon-traces", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-api-key:" + secret},
		{"bad-escape", "OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=" + secret + "%zz"},
		{"second-entry", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-tenant=a, x-api-key " + secret},
		{"bad-name", "OTEL_EXPORTER_OTLP_HEADERS", "x api key=" + secret},
	}
	for _, proto := range []string{"http/protobuf", "grpc"} {
		for _, tt := range tests {
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				logged := captureOTelLog(t)
				env := tracingEnv(t, map[string]string{
					"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
					"OTEL_EXPORTER_OTLP_PROTOCOL": proto,
					tt.variable:                   tt.value,
				})
				tr, err := newTracing(context.Background(), env)
				shutdownTracing(t, tr)
				if err == nil {
					t.Errorf("newTracing accepted %s=%q", tt.variable, tt.value)
				} else if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), tt.variable) {
					t.Errorf("error %q: want it to name %s and not quote the value", err, tt.variable)
				}
				if got := logged(); strings.Contains(got, secret) {
					t.Errorf("the OpenTelemetry SDK printed the header's value:\n%s", got)
				}
			})
		}
	}
}

// An OTEL_TRACES_SAMPLER or _ARG the SDK cannot read is a start-up error,
// as an unknown exporter or protocol is: the SDK would fall back to
// sampling every request (ratio 1.0, or parentbased_always_on) with a
// line on stderr.
func TestTracingSamplerEnvRefused(t *testing.T) {
	tests := []struct {
		sampler, arg string
		ok           bool
	}{
		{"", "", true},
		{"parentbased_traceidratio", "0.01", true},
		{"TraceIdRatio", " 0.5 ", true},
		{"always_off", "", true},
		{"parentbased_traceidratio", "", true},
		{"parentbased_traceidratio", "1%", false},
		{"parentbased_traceidratio", "5", false},
		{"traceidratio", "-0.1", false},
		{"traceidratio", "NaN", false},
		{"parentbased_traceidratio_0.01", "", false},
		{"jaeger_remote", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.sampler+"/"+tt.arg, func(t *testing.T) {
			captureOTelLog(t)
			env := tracingEnv(t, map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
				"OTEL_TRACES_SAMPLER":         tt.sampler,
				"OTEL_TRACES_SAMPLER_ARG":     tt.arg,
			})
			tr, err := newTracing(context.Background(), env)
			shutdownTracing(t, tr)
			switch {
			case tt.ok && err != nil:
				t.Errorf("newTracing refused sampler %q arg %q: %v", tt.sampler, tt.arg, err)
			case !tt.ok && err == nil:
				t.Errorf("newTracing accepted sampler %q arg %q (the SDK samples every request then)", tt.sampler, tt.arg)
			case !tt.ok && !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER"):
				t.Errorf("error %q does not name OTEL_TRACES_SAMPLER", err)
			}
		})
	}
}
