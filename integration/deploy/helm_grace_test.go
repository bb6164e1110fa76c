package deploy

import (
	"strings"
	"testing"
)

// TestHelmGracePeriodCoversTheDrain: terminationGracePeriodSeconds must
// exceed shutdown_delay (at least 1s) + shutdown_timeout (DEPLOY.md, "Helm")
// for any config, not only the default: past it the kubelet kills the
// container in the middle of the drain and the requests in flight are cut.
// Values where it does not fail the render.
func TestHelmGracePeriodCoversTheDrain(t *testing.T) {
	for _, tc := range []struct {
		set    string
		refuse bool
	}{
		{"", false}, // 5s + 15s < 30
		{"config.shutdown_timeout=60s", true},
		{"config.shutdown_timeout=60s,terminationGracePeriodSeconds=70", false},
		{"config.shutdown_delay=1m,config.shutdown_timeout=1m30s,terminationGracePeriodSeconds=150", true},
		{"config.shutdown_delay=1m,config.shutdown_timeout=1m30s,terminationGracePeriodSeconds=151", false},
		{"config.shutdown_delay=0s,config.shutdown_timeout=29s", true},       // the drain waits at least 1s
		{"config.shutdown_delay=500ms,config.shutdown_timeout=28.5s", false}, // 1s + 28.5s < 30
		{"config.shutdown_delay=null,config.shutdown_timeout=null", false},   // jwksverify's defaults: 1s + 15s
	} {
		out, err := helm(t, "template", "jv", chartDir, "--set", tc.set)
		if tc.refuse && (err == nil || !strings.Contains(err.Error(), "terminationGracePeriodSeconds")) {
			t.Errorf("helm template --set %q = %v, want an error naming terminationGracePeriodSeconds", tc.set, err)
		}
		if !tc.refuse && err != nil {
			t.Errorf("helm template --set %q = %v\n%s", tc.set, err, out)
		}
	}
}
