package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"go.yaml.in/yaml/v3"
)

// metricName finds the jwksverify metric names a PromQL expression uses.
var metricName = regexp.MustCompile(`\bjwksverify_[a-z0-9_]+`)

// monitoredMetrics returns every jwksverify metric name that
// deploy/prometheus/alerts.yaml and deploy/grafana/jwksverify.json use, with
// where each is used.
func monitoredMetrics(t *testing.T) map[string]string {
	t.Helper()
	names := map[string]string{}
	add := func(where, expr string) {
		for _, n := range metricName.FindAllString(expr, -1) {
			names[n] = where
		}
	}
	data, err := os.ReadFile("../deploy/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			add("alert "+r.Alert, r.Expr)
		}
	}
	data, err = os.ReadFile("../deploy/grafana/jwksverify.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name  string
				Query any
			}
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("jwksverify.json: %v", err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			add("panel "+p.Title, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok {
			add("variable "+v.Name, q)
		}
	}
	return names
}

// TestMonitoredMetricsExist: every metric the alert rules and the dashboard
// name is in the /metrics of the real binary, serving a remote issuer (the
// per-issuer JWKS series) after one decided token (the histogram's series).
// A renamed metric fails here instead of in a silent alert.
func TestMonitoredMetricsExist(t *testing.T) {
	names := monitoredMetrics(t)
	if len(names) < 15 {
		t.Fatalf("found %d metric names in the rules and dashboard, want the ~20 they use: %v", len(names), names)
	}
	idp := startDiscoveryIdP(t)
	// The minting metrics exist with a mint section.
	keys := filepath.Join(t.TempDir(), "mint.jwks")
	writeMintKeys(t, keys, testkeys.PrivateJWKS(mintK1))
	// The revocation metrics exist with revocation configured.
	jv := startJWKSVerify(t, fmt.Sprintf(`listen: 127.0.0.1:0
mint: {issuer: %s, keys_file: %s, signing_kid: k1}
shutdown_timeout: 1s
state_dir: %s
revocation: {}
# The redis_* metrics exist with a redis section (never dialled here).
redis: {url: "redis://127.0.0.1:1"}
issuers:
  - issuer: %s
    discovery: true
    allow_insecure_http: true
    audiences: [%s]
    # The introspection metrics exist for an issuer with introspection
    # (never asked here: the token is a JWT).
    introspection: {url: "http://127.0.0.1:1/introspect"}
    # The signal metric exists for an issuer with back-channel logout,
    # once a logout token (here a refused one) is counted.
    backchannel_logout: {audiences: [web-app]}
    # The SET poll metric exists once a poll (here of a closed port) is
    # counted.
    ssf: {audiences: [web-app], poll: {url: "http://127.0.0.1:1/poll", interval: 1h}}
`, mintIssuer, keys, t.TempDir(), idp.Issuer, idp.Audience))
	c := httpClient()
	resp, err := c.PostForm("http://"+jv.HTTP+"/v1/logout/backchannel", url.Values{"logout_token": {"not.a.token"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("POST /v1/logout/backchannel = %d, want 400", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", "http://"+jv.HTTP+"/v1/authz", nil)
	req.Header.Set("Authorization", "Bearer "+idp.Token(nil))
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/authz = %d, want 200", resp.StatusCode)
	}
	// The SET poller counts its first poll on its own goroutine: scrape
	// until every name is there, or give up after 10s.
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		missing = missingMetrics(t, c, "http://"+jv.HTTP+"/metrics", names)
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(missing) > 0 {
		t.Errorf("metrics the rules or the dashboard use but /metrics does not export:\n%s", strings.Join(missing, "\n"))
	}
}

// missingMetrics scrapes url and returns the names (with where they are
// used) that it does not export, sorted.
func missingMetrics(t *testing.T, c *http.Client, url string, names map[string]string) []string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	exported := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		exported[name] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var missing []string
	for n, where := range names {
		if !exported[n] {
			missing = append(missing, n+" ("+where+")")
		}
	}
	slices.Sort(missing)
	return missing
}
