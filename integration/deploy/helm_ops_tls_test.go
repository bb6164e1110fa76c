package deploy

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
)

// TestHelmProbesSpeakTheOpsListenersTLS: the probes and the ServiceMonitor
// speak the scheme of the listener they reach, as the rendered config has
// it: the admin listener with config.admin_tls (DEPLOY.md, "TLS": set
// admin_tls when the revocations admin API is reachable beyond the host,
// "then probes use scheme: HTTPS"), the http listener with tls.secretName
// and ports.admin 0. A plain HTTP probe of a TLS listener is answered 400
// ("Client sent an HTTP request to an HTTPS server"): a liveness failure,
// and the pods restart forever.
func TestHelmProbesSpeakTheOpsListenersTLS(t *testing.T) {
	const adminTLS = "config.admin_tls.cert_file=/etc/jwksverify-tls/tls.crt,config.admin_tls.key_file=/etc/jwksverify-tls/tls.key"
	const monitorTLS = ",serviceMonitor.tlsConfig.insecureSkipVerify=true"
	for _, tc := range []struct {
		name string
		set  string
	}{
		{"plain", "serviceMonitor.enabled=true"},
		{"tls-admin-plain", "tls.secretName=jv-tls,serviceMonitor.enabled=true"},
		{"tls-on-http-port", "tls.secretName=jv-tls,ports.admin=0,serviceMonitor.enabled=true" + monitorTLS},
		{"admin-tls", "tls.secretName=jv-tls,serviceMonitor.enabled=true," + adminTLS + monitorTLS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := renderChart(t, tc.set)
			var cfg struct {
				TLS      map[string]string `yaml:"tls"`
				AdminTLS map[string]string `yaml:"admin_tls"`
				Admin    string            `yaml:"admin_listen"`
			}
			if err := yaml.Unmarshal([]byte(k.configMap.Data["config.yaml"]), &cfg); err != nil {
				t.Fatal(err)
			}
			// The scheme of each container port's listener.
			tlsOf := map[string]bool{"http": cfg.TLS["cert_file"] != "", "admin": cfg.AdminTLS["cert_file"] != ""}
			c := k.deployment.Spec.Template.Spec.Containers[0]
			for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
				g := p.HTTPGet
				want := corev1.URISchemeHTTP
				if tlsOf[g.Port.String()] {
					want = corev1.URISchemeHTTPS
				}
				if g.Scheme != want {
					t.Errorf("probe %s on port %s: scheme %s, but that listener speaks %s (config admin_listen %q, tls %v, admin_tls %v)",
						g.Path, g.Port.String(), g.Scheme, want, cfg.Admin, cfg.TLS, cfg.AdminTLS)
				}
			}
			if m := k.serviceMonitor; m != nil {
				e := m.Spec.Endpoints[0]
				https := tlsOf[e.Port]
				if (e.Scheme == "https") != https {
					t.Errorf("ServiceMonitor scrapes port %s with scheme %q; that listener's TLS: %v", e.Port, e.Scheme, https)
				}
				// Prometheus scrapes the pod's IP: without a tlsConfig it
				// checks the certificate against the system roots and the
				// IP, which a Secret's certificate for the Service's name
				// never matches.
				if https && len(e.TLSConfig) == 0 {
					t.Errorf("ServiceMonitor scrapes https without a tlsConfig: every scrape fails verification")
				}
			}
		})
	}
}

// TestHelmRefusesOpsTLSItCannotProbe: values whose ops listener no probe
// can reach fail the render instead of rendering a config jwksverify refuses
// (admin_tls without admin_listen), pods that restart forever (admin_tls
// client_auth require: the kubelet has no client certificate), or a
// ServiceMonitor whose https scrapes all fail.
func TestHelmRefusesOpsTLSItCannotProbe(t *testing.T) {
	const adminTLS = "config.admin_tls.cert_file=/etc/jwksverify-tls/tls.crt,config.admin_tls.key_file=/etc/jwksverify-tls/tls.key"
	for _, tc := range []struct{ set, want string }{
		{"ports.admin=0," + adminTLS, "config.admin_tls needs ports.admin"},
		{adminTLS + ",config.admin_tls.client_ca_file=/etc/jwksverify-tls/ca.crt,config.admin_tls.client_auth=require", "client_auth require"},
		{"tls.secretName=jv-tls,ports.admin=0,serviceMonitor.enabled=true", "serviceMonitor.tlsConfig"},
		{"serviceMonitor.enabled=true," + adminTLS, "serviceMonitor.tlsConfig"},
	} {
		if out, err := helm(t, "template", "jv", chartDir, "--set", tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template --set %s = %v, want an error with %q\n%s", tc.set, err, tc.want, out)
		}
	}
}
