package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// dashboard is the part of Grafana's dashboard JSON model
// (https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/)
// deploy/grafana/jwksverify.json uses; decoding rejects any other field, so
// a typo fails here instead of being ignored by Grafana.
type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	Description   string `json:"description"`
	Tags          []string
	Timezone      string `json:"timezone"`
	SchemaVersion int    `json:"schemaVersion"`
	Version       int    `json:"version"`
	Editable      bool   `json:"editable"`
	Time          struct{ From, To string }
	Refresh       string `json:"refresh"`
	Templating    struct {
		List []struct {
			Name       string      `json:"name"`
			Label      string      `json:"label"`
			Type       string      `json:"type"`
			Query      string      `json:"query"`
			Datasource *datasource `json:"datasource"`
			Refresh    int         `json:"refresh"`
			IncludeAll bool        `json:"includeAll"`
			Multi      bool        `json:"multi"`
			AllValue   string      `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []json.RawMessage `json:"list"`
	} `json:"annotations"`
	Panels []panel `json:"panels"`
}

type datasource struct{ Type, UID string }

type panel struct {
	ID          int                      `json:"id"`
	Type        string                   `json:"type"`
	Title       string                   `json:"title"`
	Description string                   `json:"description"`
	Datasource  datasource               `json:"datasource"`
	GridPos     struct{ X, Y, W, H int } `json:"gridPos"`
	Targets     []struct {
		RefID        string     `json:"refId"`
		Datasource   datasource `json:"datasource"`
		Expr         string     `json:"expr"`
		LegendFormat string     `json:"legendFormat"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
		Overrides []json.RawMessage `json:"overrides"`
	} `json:"fieldConfig"`
	Options map[string]any `json:"options"`
}

// TestGrafanaDashboard decodes the dashboard strictly and checks what
// Grafana needs to import it anywhere: a uid and title, a data source
// variable every panel and query uses (no data source uid of ours), unique
// panel ids and refIds, panels of known types on the 24-column grid without
// overlap, and an expression in every query.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(deployDir + "/grafana/jwksverify.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("decode jwksverify.json: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want both set and a schema of Grafana 9 or later", d.UID, d.Title, d.SchemaVersion)
	}
	var hasDS bool
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			hasDS = true
		}
	}
	if !hasDS {
		t.Error("no templating variable datasource of type datasource, query prometheus")
	}
	if len(d.Panels) < 6 {
		t.Errorf("%d panels, want the issuer, decision, latency, cache, fetch and unknown-kid panels", len(d.Panels))
	}
	ids := map[int]bool{}
	cells := map[[2]int]string{}
	for _, p := range d.Panels {
		name := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if ids[p.ID] || p.ID <= 0 {
			t.Errorf("%s: id not unique and positive", name)
		}
		ids[p.ID] = true
		if p.Type != "stat" && p.Type != "timeseries" {
			t.Errorf("%s: type %q, want stat or timeseries", name, p.Type)
		}
		if p.Title == "" || p.Description == "" || p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("%s: want a title, a description and a unit", name)
		}
		if p.Datasource != (datasource{"prometheus", "${datasource}"}) {
			t.Errorf("%s: datasource %+v, want the ${datasource} variable", name, p.Datasource)
		}
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v outside the 24-column grid", name, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := cells[[2]int{x, y}]; ok {
					t.Errorf("%s overlaps %s at (%d,%d)", name, other, x, y)
				}
				cells[[2]int{x, y}] = name
			}
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no queries", name)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if refs[q.RefID] || q.RefID == "" {
				t.Errorf("%s: refId %q not unique", name, q.RefID)
			}
			refs[q.RefID] = true
			if !strings.Contains(q.Expr, "jwksverify_") || q.Datasource != p.Datasource {
				t.Errorf("%s: query %s %q: want a jwksverify expression on the panel's data source", name, q.RefID, q.Expr)
			}
		}
	}
}

// TestPrometheusRules runs promtool on the alert rules: check rules (syntax,
// PromQL, templates) and test rules (alerts_test.yaml: each alert fires on
// its series). .ci/run installs promtool (Debian package prometheus).
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool not found: install the Debian package prometheus"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + "; CI=true, so this fails instead of skipping")
		}
		t.Skip(msg)
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = deployDir + "/prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
