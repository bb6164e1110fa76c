package deploy

import (
	"os"
	"regexp"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	"google.golang.org/protobuf/encoding/protojson"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestPoliciesDocEnvoyRoutes decodes docs/POLICIES.md's per-route
// context_extensions example (the routes of the gRPC listener's virtual
// host) into go-control-plane's VirtualHost, validates it as Envoy would,
// and checks that it names a policy of the page's configuration.
func TestPoliciesDocEnvoyRoutes(t *testing.T) {
	doc, err := os.ReadFile(repoRoot + "/docs/POLICIES.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n# routes of the ingress_ext_authz_grpc listener's virtual host\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("POLICIES.md has no Envoy per-route example")
	}
	j, err := sigsyaml.YAMLToJSONStrict(append([]byte("name: app\ndomains: [\"*\"]\n"), m[1]...))
	if err != nil {
		t.Fatalf("YAMLToJSONStrict() = %v", err)
	}
	var vh routev3.VirtualHost
	if err := protojson.Unmarshal(j, &vh); err != nil {
		t.Fatalf("protojson.Unmarshal(VirtualHost) = %v", err)
	}
	validateDeep(t, &vh)
	named := 0
	for _, r := range vh.GetRoutes() {
		a, ok := r.GetTypedPerFilterConfig()["envoy.filters.http.ext_authz"]
		if !ok {
			continue
		}
		per := unpack(t, a, &extauthzv3.ExtAuthzPerRoute{})
		p := per.GetCheckSettings().GetContextExtensions()["policy"]
		if !regexp.MustCompile(`(?m)^  - \{name: ` + regexp.QuoteMeta(p) + `,`).Match(doc) {
			t.Errorf("context_extensions policy %q is not a policy of POLICIES.md's configuration", p)
		}
		named++
	}
	if named == 0 {
		t.Error("no route of the example names a policy")
	}
}
