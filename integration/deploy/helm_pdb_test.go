package deploy

import (
	"strings"
	"testing"
)

// TestHelmDisruptionBudgetLetsANodeDrain: a PodDisruptionBudget whose
// minAvailable is not below the fewest replicas the chart may run allows no
// eviction at all: kubectl drain (and every node upgrade) waits forever on a
// jwksverify pod. Such values fail the render; a budget that leaves one pod
// to evict renders.
func TestHelmDisruptionBudgetLetsANodeDrain(t *testing.T) {
	for _, tc := range []struct {
		set    string
		refuse bool
	}{
		{"", false}, // the HPA's minReplicas 2, minAvailable 1
		{"autoscaling.enabled=false,replicas=1", true},
		{"autoscaling.minReplicas=1", true},
		{"autoscaling.enabled=false,replicas=3,podDisruptionBudget.minAvailable=3", true},
		{"autoscaling.enabled=false,replicas=3,podDisruptionBudget.minAvailable=2", false},
		{"autoscaling.enabled=false,replicas=1,podDisruptionBudget.enabled=false", false},
	} {
		out, err := helm(t, "template", "jv", chartDir, "--set", tc.set)
		if tc.refuse && (err == nil || !strings.Contains(err.Error(), "podDisruptionBudget")) {
			t.Errorf("helm template --set %q = %v, want an error naming podDisruptionBudget", tc.set, err)
		}
		if !tc.refuse && err != nil {
			t.Errorf("helm template --set %q = %v\n%s", tc.set, err, out)
		}
	}
}
