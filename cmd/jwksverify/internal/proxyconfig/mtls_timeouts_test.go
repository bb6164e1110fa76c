package proxyconfig

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// TestNginxMTLSTimeoutsAsGenerated: deploy/nginx/nginx-mtls.conf is written
// by hand, but its auth location's timeouts must be the generated file's
// (derived from the example configuration's longest key fetch and
// unknown-kid wait): it had proxy_read_timeout 2s, so a slow key fetch
// that jwksverify would have answered became nginx's 503.
func TestNginxMTLSTimeoutsAsGenerated(t *testing.T) {
	timeouts := regexp.MustCompile(`(?m)^\s*(proxy_(?:connect|send|read)_timeout \S+;)`)
	read := func(file string) []string {
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range timeouts.FindAllStringSubmatch(string(b), -1) {
			got = append(got, m[1])
		}
		return got
	}
	generated, hand := read(deployFiles[request.Nginx]), read("deploy/nginx/nginx-mtls.conf")
	if len(generated) == 0 || !slices.Equal(hand, generated) {
		t.Errorf("deploy/nginx/nginx-mtls.conf timeouts %q, want the generated nginx.conf's %q", hand, generated)
	}
}
