package integration

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// otlpReceiver is an OTLP/HTTP trace receiver (POST /v1/traces, protobuf)
// on loopback: what a collector is to the service.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	o := &otlpReceiver{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		var body io.Reader = http.MaxBytesReader(w, r.Body, 16<<20)
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, err := io.ReadAll(io.LimitReader(body, 16<<20))
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(data, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				o.spans = append(o.spans, ss.GetSpans()...)
			}
		}
		o.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// trace returns the spans received of the trace id (hex).
func (o *otlpReceiver) trace(id string) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if hex.EncodeToString(s.GetTraceId()) == id {
			out = append(out, s)
		}
	}
	return out
}

func (o *otlpReceiver) all() []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*tracepb.Span(nil), o.spans...)
}

func spanNamed(spans []*tracepb.Span, name string) *tracepb.Span {
	for _, s := range spans {
		if s.GetName() == name {
			return s
		}
	}
	return nil
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

// TestTracingOTLP runs the real binary with OTEL_EXPORTER_OTLP_ENDPOINT at
// a real OTLP/HTTP receiver: a forward-auth request with a traceparent
// yields a server span continuing it and the verify child; an unknown-kid
// request also yields the refresh and fetch spans; no span holds the token.
func TestTracingOTLP(t *testing.T) {
	key := rhKey{testkeys.EC256A, "t-1", "ES256"}
	idp := startReloadIdP(t, map[string]rhKey{"/t": key})
	recv := startOTLPReceiver(t)
	const iss = "https://trace.example/"
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeAtomically(t, cfg, fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 5s
issuers:
  - issuer: %s
    jwks_url: %s/t
    audiences: [api://t]
    refresh: {unknown_kid_interval: 1s}
`, iss, idp.srv.URL))
	cmd := exec.Command(jwksverifyBinary(t), "serve", "--config", cfg)
	cmd.Env = append(os.Environ(),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.srv.URL,
		"OTEL_BSP_SCHEDULE_DELAY=50", // export within 50 ms
		"OTEL_SERVICE_NAME=jwksverify-test")
	p := startProcess(t, "jwksverify", cmd)
	var addr string
	if _, ok := rhWaitFor(startTimeout, func() bool { addr, _ = listeningLine(p.Output()); return addr != "" }); !ok {
		t.Fatalf("no listening line:\n%s", p.Output())
	}
	base := "http://" + addr
	c := rhClient(t)
	if _, ok := rhWaitFor(startTimeout, func() bool { s, err := rhReadyz(c, base); return err == nil && s == 200 }); !ok {
		t.Fatal("not ready")
	}

	authz := func(token, traceparent string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/authz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("traceparent", traceparent)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	valid := reloadToken(key, iss, "api://t", "valid")
	unknownKid := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A), map[string]any{"kid": "not-published"},
		map[string]any{"iss": iss, "aud": "api://t", "sub": "x", "exp": time.Now().Add(time.Hour).Unix()})

	tests := []struct {
		name, token, traceID, parent string
		status                       int
		want                         []string // span names besides the server span
	}{
		{"valid", valid, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", 200, []string{"verify"}},
		{"unknown-kid", unknownKid, "5bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902b8", 401, []string{"verify", "jwks.refresh_unknown_kid", "jwks.fetch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := authz(tt.token, "00-"+tt.traceID+"-"+tt.parent+"-01"); got != tt.status {
				t.Fatalf("GET /v1/authz = %d, want %d", got, tt.status)
			}
			want := len(tt.want) + 1
			var spans []*tracepb.Span
			if _, ok := rhWaitFor(10*time.Second, func() bool { spans = recv.trace(tt.traceID); return len(spans) >= want }); !ok {
				t.Fatalf("received %d spans of trace %s, want %d: %v", len(spans), tt.traceID, want, spans)
			}
			srv := spanNamed(spans, "GET /v1/authz")
			if srv == nil {
				t.Fatalf("no server span in %v", spans)
			}
			if got := hex.EncodeToString(srv.GetParentSpanId()); got != tt.parent {
				t.Errorf("server span's parent = %s, want the traceparent's %s", got, tt.parent)
			}
			if srv.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("server span kind = %v", srv.GetKind())
			}
			parentOf := map[string]string{"verify": "GET /v1/authz", "jwks.refresh_unknown_kid": "verify", "jwks.fetch": "jwks.refresh_unknown_kid"}
			for _, name := range tt.want {
				s := spanNamed(spans, name)
				if s == nil {
					t.Errorf("no %s span in trace %s", name, tt.traceID)
					continue
				}
				if p := spanNamed(spans, parentOf[name]); p != nil && !bytes.Equal(s.GetParentSpanId(), p.GetSpanId()) {
					t.Errorf("%s span's parent is not the %s span", name, parentOf[name])
				}
			}
			v := spanNamed(spans, "verify")
			wantClass := map[int]string{200: "valid", 401: "unknown_kid"}[tt.status]
			if got := attr(v, "jwksverify.class").GetStringValue(); got != wantClass {
				t.Errorf("verify span class = %q, want %q", got, wantClass)
			}
			if got := attr(v, "jwksverify.issuer").GetStringValue(); got != iss {
				t.Errorf("verify span issuer = %q, want %q", got, iss)
			}
			if attr(v, "jwksverify.cache_hit") == nil {
				t.Errorf("verify span has no cache_hit attribute")
			}
		})
	}
	// A log line of a traced request names its trace.
	if _, ok := rhWaitFor(5*time.Second, func() bool { return strings.Contains(p.Output(), `"trace_id":"`+tests[1].traceID+`"`) }); !ok {
		t.Errorf("no log line with trace_id %s:\n%s", tests[1].traceID, p.Output())
	}

	// No span, attribute, event or status anywhere holds a token, or any
	// of its segments.
	var secrets []string
	for _, tok := range []string{valid, unknownKid} {
		secrets = append(secrets, strings.Split(tok, ".")...)
	}
	for _, s := range recv.all() {
		dump, _ := json.Marshal(s)
		text := s.String() + string(dump)
		for _, sec := range secrets {
			if strings.Contains(text, sec) {
				t.Errorf("span %s holds a part of a token", s.GetName())
			}
		}
	}
}
