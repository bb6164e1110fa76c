package introspect_test

import (
	"cmp"
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/jwksverify/jwksverify/introspect"
)

// TestIntrospectionCallSpan: SPEC's tracing names a span for each
// introspection call; none was made. Each upstream call is an "introspect"
// client span with the issuer, the endpoint without its query or user info
// and whether the answer was active, or the error; never the token or the
// client's secret. A cached answer makes no call and no span.
func TestIntrospectionCallSpan(t *testing.T) {
	srv, url := newServer(t)
	srv.set("tok-a", activeAnswer(t0.Add(time.Hour)))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c := newClient(t, introspect.Options{URL: url + "/introspect?api_key=s3cret", Tracer: tp.Tracer("test"), MaxTTL: time.Minute, NegativeTTL: time.Second})
	ctx := context.Background()
	for _, tok := range []string{"tok-a", "tok-a", "tok-x"} { // the second from the cache
		_, _ = c.Introspect(ctx, tok, t0)
	}
	srv.setFail(true)
	_, _ = c.Introspect(ctx, "tok-y", t0)

	var got []string
	for _, s := range rec.Ended() {
		if s.Name() != "introspect" || s.SpanKind().String() != "client" {
			t.Errorf("span %q of kind %s, want introspect client spans only", s.Name(), s.SpanKind())
			continue
		}
		attrs := map[string]string{}
		for _, a := range s.Attributes() {
			attrs[string(a.Key)] = a.Value.String()
			if v := a.Value.String(); strings.Contains(v, "tok-") || strings.Contains(v, "s3cret") {
				t.Errorf("attribute %s = %q: the token or the endpoint's secret", a.Key, v)
			}
		}
		if strings.Contains(s.Status().Description, "tok-") || strings.Contains(s.Status().Description, "s3cret") {
			t.Errorf("status %q: the token or the endpoint's secret", s.Status().Description)
		}
		if attrs["jwksverify.issuer"] != "https://as.example.com/" || attrs["url.full"] != url+"/introspect" {
			t.Errorf("attributes %v, want the issuer and the endpoint without its query", attrs)
		}
		got = append(got, cmp.Or(attrs["jwksverify.active"], s.Status().Code.String()))
	}
	if want := []string{"true", "false", "Error"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("spans say %v, want %v: one a call (the cached answer none)", got, want)
	}
}
