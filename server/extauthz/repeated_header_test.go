package extauthz

import (
	"runtime"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	"github.com/jwksverify/jwksverify/server"
)

// TestRepeatedHeaderLinear: a CheckRequest whose header_map repeats one
// header thousands of times (within the gRPC message bound, which is the
// body bound: 64 KiB) must cost work and memory linear in its size.
// envoyHeaders.lookup appended each value to a slice cut to its length,
// so every value copied all those before it: n²/2 string headers, about
// 16·n²/2 bytes allocated per Check.
func TestRepeatedHeaderLinear(t *testing.T) {
	a := rtServer(t, server.Options{}, nil)
	req := envoyRequest("GET", "/x", nil)
	var hs []*corev3.HeaderValue
	for proto.Size(req) < 60<<10 {
		hs = append(hs, &corev3.HeaderValue{Key: "authorization", Value: "x"})
		req.Attributes.Request.Http.HeaderMap = &corev3.HeaderMap{Headers: hs}
	}
	t.Logf("%d header_map entries, %d bytes", len(hs), proto.Size(req))
	_, _ = a.Check(t.Context(), req) // warm
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	resp, err := a.Check(t.Context(), req)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("code=%v err=%v: %d bytes allocated, %v", code(resp, err), err, alloc, took)
	if alloc > 16<<20 {
		t.Errorf("one 60 KiB CheckRequest allocated %d MiB", alloc>>20)
	}
}
