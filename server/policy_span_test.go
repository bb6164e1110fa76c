package server

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestPolicySpan: SPEC's tracing names a span for each policy evaluation;
// none was made (the verify span and the request's server span only). A
// policy that runs is a "policy" child of the request's span, with the
// policy's name, whether it allowed and the requirement that refused;
// never the token or the request's path.
func TestPolicySpan(t *testing.T) {
	read := mint(claims(map[string]any{"scope": "orders:read"}))
	for _, tt := range []struct {
		name, method, path string
		allowed            bool
		policy, req        string
	}{
		{"allowed", "GET", "/orders/1", true, "orders-read", ""},
		{"refused", "POST", "/orders/secret-path", false, "orders-write", "scopes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			e := newPolicyEnvWith(t, nil, func(o *Options) { o.Tracer = tp.Tracer("test") })
			do(e.handler, nginxAuthz(tt.method, tt.path, read, nil))
			var server, pol sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				switch s.Name() {
				case "policy":
					pol = s
				case "GET /v1/authz":
					server = s
				}
			}
			if pol == nil || server == nil {
				t.Fatalf("spans %v, want a policy span under the request's", spanNames(rec.Ended()))
			}
			if pol.Parent().SpanID() != server.SpanContext().SpanID() {
				t.Errorf("the policy span's parent is %v, want the request's span %v", pol.Parent().SpanID(), server.SpanContext().SpanID())
			}
			attrs := map[string]string{}
			for _, a := range pol.Attributes() {
				attrs[string(a.Key)] = a.Value.String()
			}
			want := map[string]string{"jwksverify.policy": tt.policy, "jwksverify.allowed": map[bool]string{true: "true", false: "false"}[tt.allowed]}
			if !tt.allowed {
				want["jwksverify.requirement"] = tt.req
			}
			for k, v := range want {
				if attrs[k] != v {
					t.Errorf("policy span %s = %q, want %q (attributes %v)", k, attrs[k], v, attrs)
				}
			}
			for k, v := range attrs {
				if len(v) > 64 || v == read || v == tt.path {
					t.Errorf("policy span attribute %s = %.80q: the request or the token", k, v)
				}
			}
		})
	}
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
	}
	return names
}
