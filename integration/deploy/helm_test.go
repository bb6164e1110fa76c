package deploy

import (
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
)

// chartDir is the Helm chart.
const chartDir = deployDir + "/helm/jwksverify"

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// (monitoring.coreos.com/v1) the chart writes; decoding rejects any other
// field.
type serviceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
			Scheme   string `json:"scheme"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// helmTool returns the helm CLI: from PATH, else from GOPATH/bin (where
// .ci/run's go install puts it). Missing, it fails under CI=true and skips
// otherwise.
func helmTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	p := filepath.Join(build.Default.GOPATH, "bin", "helm")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	msg := "helm not found: go install helm.sh/helm/v3/cmd/helm@v3.22.0"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI=true, so this fails instead of skipping")
	}
	t.Skip(msg)
	return ""
}

// helm runs the helm CLI with args and returns its standard output.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmTool(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), &helmError{err, stderr.String()}
	}
	return string(out), nil
}

type helmError struct {
	err    error
	stderr string
}

func (e *helmError) Error() string { return e.err.Error() + ": " + e.stderr }

func TestHelmLint(t *testing.T) {
	for _, set := range []string{"", "serviceMonitor.enabled=true,tls.secretName=jwksverify-tls", "ports.admin=0,ports.grpc=0,autoscaling.enabled=false"} {
		args := []string{"lint", "--strict", chartDir}
		if set != "" {
			args = append(args, "--set", set)
		}
		if out, err := helm(t, args...); err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// chartConfig is the rendered ConfigMap's config.yaml, the keys the chart
// owns.
type chartConfig struct {
	Listen      string            `yaml:"listen"`
	GRPCListen  string            `yaml:"grpc_listen"`
	AdminListen string            `yaml:"admin_listen"`
	StateDir    string            `yaml:"state_dir"`
	TLS         map[string]string `yaml:"tls"`
	Delay       string            `yaml:"shutdown_delay"`
	Timeout     string            `yaml:"shutdown_timeout"`
	Issuers     []map[string]any  `yaml:"issuers"`
}

// TestHelmTemplate renders the chart with several sets of values, decodes
// every manifest strictly into its k8s.io/api type, and checks that the
// pieces agree: probes and the ServiceMonitor on the admin port that
// admin_listen opens, the TLS Secret mounted where the config's tls names
// its files, selectors matching the pod labels, the HPA scaling the
// Deployment, a grace period covering the drain.
func TestHelmTemplate(t *testing.T) {
	tests := []struct {
		name           string
		set            string
		wantOps        string // the port name of probes and /metrics
		wantScheme     corev1.URIScheme
		wantTLS        bool
		wantMonitor    bool
		wantHPA        bool
		wantAdminPort  int32
		wantGRPCListen string
	}{
		{name: "defaults", wantOps: "admin", wantScheme: corev1.URISchemeHTTP, wantHPA: true, wantAdminPort: 9090, wantGRPCListen: "0.0.0.0:9001"},
		{name: "tls-and-servicemonitor", set: "tls.secretName=jwksverify-tls,serviceMonitor.enabled=true", wantOps: "admin", wantScheme: corev1.URISchemeHTTP,
			wantTLS: true, wantMonitor: true, wantHPA: true, wantAdminPort: 9090, wantGRPCListen: "0.0.0.0:9001"},
		{name: "no-admin-port-tls", set: "ports.admin=0,ports.grpc=0,tls.secretName=s,serviceMonitor.enabled=true,autoscaling.enabled=false,replicas=3",
			wantOps: "http", wantScheme: corev1.URISchemeHTTPS, wantTLS: true, wantMonitor: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "jv", chartDir}
			if tc.set != "" {
				args = append(args, "--set", tc.set)
			}
			out, err := helm(t, args...)
			if err != nil {
				t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
			}
			var k k8sObjects
			seen := map[string]string{}
			decodeManifests(t, "helm template "+tc.set, []byte(out), &k, seen)
			if k.deployment == nil || k.service == nil || k.configMap == nil || k.pdb == nil {
				t.Fatalf("rendered kinds = %v, want Deployment, Service, ConfigMap and PodDisruptionBudget", seen)
			}
			if (k.hpa != nil) != tc.wantHPA || (k.serviceMonitor != nil) != tc.wantMonitor {
				t.Fatalf("rendered kinds = %v, want HPA %v, ServiceMonitor %v", seen, tc.wantHPA, tc.wantMonitor)
			}
			var cfg chartConfig
			if err := yaml.Unmarshal([]byte(k.configMap.Data["config.yaml"]), &cfg); err != nil {
				t.Fatalf("config.yaml: %v", err)
			}
			pod := k.deployment.Spec.Template
			if len(pod.Spec.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
			}
			c := pod.Spec.Containers[0]
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			if ports["http"] != httpPort || cfg.Listen != "0.0.0.0:8080" {
				t.Errorf("http port %d, listen %q; want %d and 0.0.0.0:%d", ports["http"], cfg.Listen, httpPort, httpPort)
			}
			if cfg.GRPCListen != tc.wantGRPCListen || (ports["grpc"] != 0) != (tc.wantGRPCListen != "") {
				t.Errorf("grpc_listen %q, grpc port %d; want %q", cfg.GRPCListen, ports["grpc"], tc.wantGRPCListen)
			}
			if ports["admin"] != tc.wantAdminPort || (cfg.AdminListen != "") != (tc.wantAdminPort != 0) ||
				(tc.wantAdminPort != 0 && portOf(t, cfg.AdminListen) != int(tc.wantAdminPort)) {
				t.Errorf("admin port %d, admin_listen %q; want port %d", ports["admin"], cfg.AdminListen, tc.wantAdminPort)
			}
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
				if p.probe == nil || p.probe.HTTPGet == nil {
					t.Errorf("%s probe = %+v, want an httpGet", p.name, p.probe)
					continue
				}
				g := p.probe.HTTPGet
				if g.Path != p.path || g.Port.String() != tc.wantOps || g.Scheme != tc.wantScheme {
					t.Errorf("%s probe = %s %s on %s, want %s %s on %s", p.name, g.Scheme, g.Path, g.Port.String(), tc.wantScheme, p.path, tc.wantOps)
				}
			}
			mounts := map[string]string{}
			for _, m := range c.VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			var secret string
			for _, v := range pod.Spec.Volumes {
				if v.Secret != nil {
					secret = v.Name
				}
				if v.ConfigMap != nil && v.ConfigMap.Name != k.configMap.Name {
					t.Errorf("config volume names ConfigMap %q, want %q", v.ConfigMap.Name, k.configMap.Name)
				}
			}
			if tc.wantTLS {
				dir := mounts[secret]
				if secret == "" || cfg.TLS["cert_file"] != dir+"/tls.crt" || cfg.TLS["key_file"] != dir+"/tls.key" {
					t.Errorf("TLS: secret volume %q mounted at %q, config tls %v; want the Secret's tls.crt and tls.key", secret, dir, cfg.TLS)
				}
			} else if secret != "" || cfg.TLS != nil {
				t.Errorf("TLS off: secret volume %q, config tls %v; want neither", secret, cfg.TLS)
			}
			if mounts["state"] != cfg.StateDir || cfg.StateDir == "" {
				t.Errorf("state_dir %q, state volume at %q; want the same", cfg.StateDir, mounts["state"])
			}
			if !strings.HasPrefix(c.Args[len(c.Args)-1], mounts["config"]+"/") {
				t.Errorf("args %q do not read the config volume at %q", c.Args, mounts["config"])
			}
			need := drainTime(t, cfg.Delay, cfg.Timeout)
			if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || float64(*g) <= need.Seconds() {
				t.Errorf("terminationGracePeriodSeconds = %v, want more than shutdown_delay + shutdown_timeout = %v", g, need)
			}
			if pod.Annotations["checksum/config"] == "" {
				t.Error("pod template has no checksum/config annotation: a config change would not roll the pods")
			}
			selects := func(what string, sel map[string]string) {
				if len(sel) == 0 {
					t.Errorf("%s selects nothing", what)
				}
				for k, v := range sel {
					if pod.Labels[k] != v {
						t.Errorf("%s selects %s=%s, pod labels %v", what, k, v, pod.Labels)
					}
				}
			}
			selects("Deployment", k.deployment.Spec.Selector.MatchLabels)
			selects("Service", k.service.Spec.Selector)
			selects("PodDisruptionBudget", k.pdb.Spec.Selector.MatchLabels)
			svcPorts := map[string]bool{}
			for _, p := range k.service.Spec.Ports {
				svcPorts[p.Name] = true
				if p.TargetPort.String() != p.Name || ports[p.Name] == 0 {
					t.Errorf("Service port %s targets %s, want the container port of that name", p.Name, p.TargetPort.String())
				}
			}
			if k.hpa != nil && (k.hpa.Spec.ScaleTargetRef.Name != k.deployment.Name || k.hpa.Spec.ScaleTargetRef.Kind != "Deployment") {
				t.Errorf("HPA scales %+v, want Deployment %s", k.hpa.Spec.ScaleTargetRef, k.deployment.Name)
			}
			if k.hpa == nil && (k.deployment.Spec.Replicas == nil || *k.deployment.Spec.Replicas != 3) {
				t.Errorf("without autoscaling replicas = %v, want 3", k.deployment.Spec.Replicas)
			}
			if m := k.serviceMonitor; m != nil {
				for key, v := range m.Spec.Selector.MatchLabels {
					if k.service.Labels[key] != v {
						t.Errorf("ServiceMonitor selects %s=%s, Service labels %v", key, v, k.service.Labels)
					}
				}
				wantScheme := ""
				if tc.wantScheme == corev1.URISchemeHTTPS {
					wantScheme = "https"
				}
				if len(m.Spec.Endpoints) != 1 || m.Spec.Endpoints[0].Port != tc.wantOps || m.Spec.Endpoints[0].Path != "/metrics" ||
					m.Spec.Endpoints[0].Scheme != wantScheme || !svcPorts[tc.wantOps] {
					t.Errorf("ServiceMonitor endpoints %+v, want /metrics on the Service's %s port, scheme %q", m.Spec.Endpoints, tc.wantOps, wantScheme)
				}
			}
		})
	}
}

// TestHelmRefusesOwnedKeys: a config value the chart sets from its own
// values (a listen address, tls) fails the render instead of being
// overridden silently.
func TestHelmRefusesOwnedKeys(t *testing.T) {
	for _, key := range []string{"listen", "admin_listen", "tls", "state_dir"} {
		if out, err := helm(t, "template", "jv", chartDir, "--set", "config."+key+"=x"); err == nil || !strings.Contains(err.Error(), "config."+key) {
			t.Errorf("helm template --set config.%s=x = %v, want an error naming config.%s\n%s", key, err, key, out)
		}
	}
}
