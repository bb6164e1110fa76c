package proxyconfig

import (
	"bytes"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/jwksverify/jwksverify/request"
)

// envoyHTTPHealthPort returns the port Envoy's active health check of the
// jwksverify_http cluster connects to: the endpoint's
// health_check_config.port_value when set, else its address's port.
func envoyHTTPHealthPort(t *testing.T, file []byte) (port int, path string) {
	t.Helper()
	var doc struct {
		StaticResources struct {
			Clusters []struct {
				Name         string `yaml:"name"`
				HealthChecks []struct {
					HTTP struct {
						Path string `yaml:"path"`
					} `yaml:"http_health_check"`
				} `yaml:"health_checks"`
				LoadAssignment struct {
					Endpoints []struct {
						LBEndpoints []struct {
							Endpoint struct {
								Address struct {
									Socket struct {
										Port int `yaml:"port_value"`
									} `yaml:"socket_address"`
								} `yaml:"address"`
								HealthCheck struct {
									Port int `yaml:"port_value"`
								} `yaml:"health_check_config"`
							} `yaml:"endpoint"`
						} `yaml:"lb_endpoints"`
					} `yaml:"endpoints"`
				} `yaml:"load_assignment"`
			} `yaml:"clusters"`
		} `yaml:"static_resources"`
	}
	if err := yaml.Unmarshal(file, &doc); err != nil {
		t.Fatalf("envoy.yaml: %v", err)
	}
	for _, c := range doc.StaticResources.Clusters {
		if c.Name != "jwksverify_http" {
			continue
		}
		if len(c.HealthChecks) != 1 || len(c.LoadAssignment.Endpoints) != 1 || len(c.LoadAssignment.Endpoints[0].LBEndpoints) != 1 {
			t.Fatalf("jwksverify_http: want one health check and one endpoint, got %+v", c)
		}
		ep := c.LoadAssignment.Endpoints[0].LBEndpoints[0].Endpoint
		port = ep.Address.Socket.Port
		if ep.HealthCheck.Port != 0 {
			port = ep.HealthCheck.Port
		}
		return port, c.HealthChecks[0].HTTP.Path
	}
	t.Fatal("envoy.yaml has no jwksverify_http cluster")
	return 0, ""
}

// TestEnvoyHealthCheckFollowsAdminListen: with admin_listen set, /readyz is
// served there only (404 on listen), so an Envoy health check of /readyz on
// the HTTP listener finds every host unhealthy whatever its keys: Envoy
// then routes to all of them in panic mode, and a replica that cannot
// decide stays in rotation. The check goes to the admin port.
func TestEnvoyHealthCheckFollowsAdminListen(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       int
	}{
		{"admin-listen", "listen: 127.0.0.1:8080\nadmin_listen: 127.0.0.1:9090\n" + envoyIssuer, 9090},
		{"no-admin-listen", "listen: 127.0.0.1:8080\n" + envoyIssuer, 8080},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := FromPlan(loadPlan(t, tc.yaml), request.Envoy)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := Write(&b, in); err != nil {
				t.Fatal(err)
			}
			port, path := envoyHTTPHealthPort(t, b.Bytes())
			if port != tc.want || path != "/readyz" {
				t.Errorf("jwksverify_http health check: GET %s on port %d, want /readyz on %d (where jwksverify serves it)", path, port, tc.want)
			}
		})
	}
}

const envoyIssuer = `forward_auth: {proxy: envoy}
issuers:
  - issuer: https://a.example.com/
    jwks_url: https://a.example.com/jwks
`
