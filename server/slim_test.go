package server

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestMiddlewareLinksNoGRPCOrPrometheus lists, with go list -deps, every
// package that a program using only Middleware, jwks and verify links
// (testdata/middlewareonly), and fails on any gRPC, Envoy or Prometheus
// package: those belong to server/extauthz and server/metrics.
func TestMiddlewareLinksNoGRPCOrPrometheus(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the program's packages: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "./testdata/middlewareonly").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !slices.Contains(deps, "github.com/jwksverify/jwksverify/server") {
		t.Fatalf("go list -deps listed %d packages without server: %q", len(deps), out)
	}
	for _, p := range deps {
		for _, banned := range []string{"google.golang.org/grpc", "google.golang.org/genproto", "github.com/envoyproxy", "github.com/prometheus", "google.golang.org/protobuf"} {
			if p == banned || strings.HasPrefix(p, banned+"/") {
				t.Errorf("a program using only server.Middleware links %s", p)
			}
		}
	}
}
