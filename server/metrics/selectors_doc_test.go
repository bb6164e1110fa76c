package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// enumLabels are the labels whose values are a fixed set that docs/API.md
// writes out: a selector on another value matches no series.
var enumLabels = map[string]bool{"result": true, "outcome": true, "reason": true, "class": true, "kind": true, "source": true, "event": true}

var (
	docSelector = regexp.MustCompile(`\b(jwksverify_[a-z_]+)\{([^}]*)\}`)
	docMatcher  = regexp.MustCompile(`([a-z_]+)\s*(?:=|!=)\s*\\?"([^"\\]*)\\?"`)
)

// TestDocSelectorsNameDocumentedValues: every PromQL selector the adopter's
// docs, the changelog and the alert rules write on a label with a fixed set
// of values (jwksverify_config_reloads_total{result="failure"}) names a
// metric of docs/API.md's table and a value its row documents (for class:
// an error class of its table, or valid). An alert written from a page
// that names a value the code never sets would never fire.
func TestDocSelectorsNameDocumentedValues(t *testing.T) {
	api := servertest.APIDoc(t, apiDoc)
	n := 0
	for _, doc := range []string{"README.md", "CHANGELOG.md", "SECURITY.md", "docs/API.md", "docs/CONFIG.md",
		"docs/OPERATIONS.md", "docs/DEPLOY.md", "docs/POLICIES.md", "deploy/prometheus/alerts.yaml", "deploy/grafana/jwksverify.json"} {
		b, err := os.ReadFile("../../" + doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, sel := range docSelector.FindAllStringSubmatch(string(b), -1) {
			name := sel[1]
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if base := strings.TrimSuffix(name, suffix); servertest.TableRow(api, "`"+base+"`") != "" {
					name = base
				}
			}
			row := servertest.TableRow(api, "`"+name+"`")
			if row == "" {
				t.Errorf("%s: %s names a metric docs/API.md's table does not have", doc, sel[0])
				continue
			}
			for _, m := range docMatcher.FindAllStringSubmatch(sel[2], -1) {
				label, value := m[1], m[2]
				if !enumLabels[label] {
					continue
				}
				n++
				documented := strings.Contains(row, "`"+value+"`")
				if label == "class" {
					documented = value == "valid" || servertest.TableRow(api, "`"+value+"`") != ""
				}
				if !documented {
					t.Errorf("%s: %s selects %s=%q, which docs/API.md does not give as a value of %s", doc, sel[0], label, value, name)
				}
			}
		}
	}
	if n < 15 {
		t.Errorf("checked %d label values, want the ~20 the docs select on", n)
	}
}
