package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"go/build"
	"maps"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
			// TLSConfig is the endpoint's SafeTLSConfig, from
			// serviceMonitor.tlsConfig.
			TLSConfig map[string]any `json:"tlsConfig"`
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

// renderChart runs helm template with the values set (may be empty) and
// more arguments, and decodes the manifests strictly.
func renderChart(t *testing.T, set string, more ...string) (k8sObjects, map[string]string) {
	t.Helper()
	args := append([]string{"template", "jv", chartDir}, more...)
	if set != "" {
		args = append(args, "--set", set)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	var k k8sObjects
	seen := map[string]string{}
	decodeManifests(t, "helm template "+set, []byte(out), &k, seen)
	return k, seen
}

// chartConfig is the rendered ConfigMap's config.yaml, the keys the chart
// owns.
type chartConfig struct {
	Listen      string            `yaml:"listen"`
	GRPCListen  string            `yaml:"grpc_listen"`
	AdminListen string            `yaml:"admin_listen"`
	StateDir    string            `yaml:"state_dir"`
	TLS         map[string]string `yaml:"tls"`
	GRPCTLS     map[string]string `yaml:"grpc_tls"`
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
		{name: "no-admin-port-tls", set: "ports.admin=0,ports.grpc=0,tls.secretName=s,serviceMonitor.enabled=true,serviceMonitor.tlsConfig.serverName=jv.svc,autoscaling.enabled=false,replicas=3",
			wantOps: "http", wantScheme: corev1.URISchemeHTTPS, wantTLS: true, wantMonitor: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, seen := renderChart(t, tc.set)
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
				// The gRPC listener is TLS too, as in the plain manifests
				// (it was left plaintext beside an HTTPS listener).
				if tc.wantGRPCListen != "" && !maps.Equal(cfg.GRPCTLS, cfg.TLS) {
					t.Errorf("TLS with gRPC on: grpc_tls %v, want the Secret's pair %v", cfg.GRPCTLS, cfg.TLS)
				}
			} else if secret != "" || cfg.TLS != nil || cfg.GRPCTLS != nil {
				t.Errorf("TLS off: secret volume %q, config tls %v, grpc_tls %v; want none", secret, cfg.TLS, cfg.GRPCTLS)
			}
			if tc.wantGRPCListen == "" && cfg.GRPCTLS != nil {
				t.Errorf("gRPC off: grpc_tls %v", cfg.GRPCTLS)
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

// kubernetesIssuerEntry is the issuer entry the chart adds with
// kubernetesServiceAccountIssuer, decoded strictly: a key the test does not
// know fails it.
type kubernetesIssuerEntry struct {
	Issuer               string            `yaml:"issuer"`
	Discovery            bool              `yaml:"discovery"`
	DiscoveryURL         string            `yaml:"discovery_url"`
	CAFile               string            `yaml:"ca_file"`
	FetchBearerTokenFile string            `yaml:"fetch_bearer_token_file"`
	Audiences            []string          `yaml:"audiences"`
	Algorithms           []string          `yaml:"algorithms"`
	ClaimsToHeaders      map[string]string `yaml:"claims_to_headers"`
}

// TestHelmKubernetesServiceAccountIssuer renders the chart with
// kubernetesServiceAccountIssuer off (the default) and on, decodes every
// manifest into its k8s.io/api type, and checks that the pieces agree: the
// issuer entry's ca_file and fetch_bearer_token_file are the files of the
// projected volume the container mounts (the cluster CA from
// kube-root-ca.crt, a service-account token for the API server's audience),
// the pods run as the ServiceAccount that the ClusterRoleBinding gives
// system:service-account-issuer-discovery, and the rendered config passes
// `jwksverify check` once the mounted files exist.
func TestHelmKubernetesServiceAccountIssuer(t *testing.T) {
	const ns = "auth"
	tests := []struct {
		name         string
		set          string
		wantOn       bool
		wantIssuer   string
		wantAudience string // the projected token's
		wantSA       string
		wantExtra    bool // issuerConfig's algorithms and claims_to_headers
	}{
		{name: "off-by-default"},
		{name: "on", set: "kubernetesServiceAccountIssuer.enabled=true,kubernetesServiceAccountIssuer.audiences={my-api}",
			wantOn: true, wantIssuer: "https://kubernetes.default.svc.cluster.local", wantAudience: "https://kubernetes.default.svc.cluster.local", wantSA: "jv-jwksverify"},
		{name: "on-with-overrides", set: "kubernetesServiceAccountIssuer.enabled=true,kubernetesServiceAccountIssuer.audiences={my-api,other},kubernetesServiceAccountIssuer.issuer=https://oidc.eks.example.com/id/ABC," +
			"kubernetesServiceAccountIssuer.tokenAudience=sts.example.com,kubernetesServiceAccountIssuer.serviceAccountName=verifier," +
			"kubernetesServiceAccountIssuer.issuerConfig.algorithms={RS256},kubernetesServiceAccountIssuer.issuerConfig.claims_to_headers.sub=X-Workload",
			wantOn: true, wantIssuer: "https://oidc.eks.example.com/id/ABC", wantAudience: "sts.example.com", wantSA: "verifier", wantExtra: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, seen := renderChart(t, tc.set, "--namespace", ns)
			if k.deployment == nil || k.configMap == nil {
				t.Fatalf("rendered kinds = %v, want a Deployment and a ConfigMap", seen)
			}
			var cfg chartConfig
			if err := yaml.Unmarshal([]byte(k.configMap.Data["config.yaml"]), &cfg); err != nil {
				t.Fatalf("config.yaml: %v", err)
			}
			pod := k.deployment.Spec.Template.Spec
			c := pod.Containers[0]
			var vol *corev1.Volume
			for i := range pod.Volumes {
				if pod.Volumes[i].Projected != nil {
					vol = &pod.Volumes[i]
				}
			}
			if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
				t.Errorf("automountServiceAccountToken = %v, want false (the issuer's fetches use their own projected token)", pod.AutomountServiceAccountToken)
			}
			if !tc.wantOn {
				if k.serviceAccount != nil || k.clusterRoleBinding != nil || vol != nil || pod.ServiceAccountName != "" || len(cfg.Issuers) != 1 {
					t.Errorf("off: ServiceAccount %v, ClusterRoleBinding %v, projected volume %v, serviceAccountName %q, %d issuers; want none of them and the one issuer of the values",
						k.serviceAccount != nil, k.clusterRoleBinding != nil, vol != nil, pod.ServiceAccountName, len(cfg.Issuers))
				}
				return
			}

			// The issuer entry, appended to the values' issuers.
			if len(cfg.Issuers) != 2 {
				t.Fatalf("%d issuers, want the values' one and the service-account issuer", len(cfg.Issuers))
			}
			raw, _ := yaml.Marshal(cfg.Issuers[1])
			var entry kubernetesIssuerEntry
			dec := yaml.NewDecoder(strings.NewReader(string(raw)))
			dec.KnownFields(true)
			if err := dec.Decode(&entry); err != nil {
				t.Fatalf("issuer entry %s: %v", raw, err)
			}
			wantAuds := []string{"my-api"}
			if tc.wantExtra {
				wantAuds = []string{"my-api", "other"}
			}
			if entry.Issuer != tc.wantIssuer || !entry.Discovery || entry.DiscoveryURL != "https://kubernetes.default.svc/.well-known/openid-configuration" ||
				!slices.Equal(entry.Audiences, wantAuds) {
				t.Errorf("issuer entry = %+v, want issuer %s, discovery at the in-cluster URL, audiences %v", entry, tc.wantIssuer, wantAuds)
			}
			if tc.wantExtra != (slices.Equal(entry.Algorithms, []string{"RS256"}) && entry.ClaimsToHeaders["sub"] == "X-Workload") {
				t.Errorf("issuer entry = %+v, want issuerConfig's keys merged: %v", entry, tc.wantExtra)
			}

			// The files it names are the projected volume's, where the
			// container mounts it.
			if vol == nil {
				t.Fatal("no projected volume")
			}
			var mount *corev1.VolumeMount
			for i := range c.VolumeMounts {
				if c.VolumeMounts[i].Name == vol.Name {
					mount = &c.VolumeMounts[i]
				}
			}
			if mount == nil || !mount.ReadOnly {
				t.Fatalf("projected volume %s mounted %+v, want a read-only mount", vol.Name, mount)
			}
			var tokenPath, caPath string
			for _, src := range vol.Projected.Sources {
				switch {
				case src.ServiceAccountToken != nil:
					st := src.ServiceAccountToken
					tokenPath = mount.MountPath + "/" + st.Path
					if st.Audience != tc.wantAudience || st.ExpirationSeconds == nil || *st.ExpirationSeconds != 3600 {
						t.Errorf("serviceAccountToken = %+v, want audience %s, 3600s", st, tc.wantAudience)
					}
				case src.ConfigMap != nil:
					cm := src.ConfigMap
					if cm.Name != "kube-root-ca.crt" || len(cm.Items) != 1 || cm.Items[0].Key != "ca.crt" {
						t.Errorf("configMap source = %+v, want kube-root-ca.crt's ca.crt", cm)
					} else {
						caPath = mount.MountPath + "/" + cm.Items[0].Path
					}
				default:
					t.Errorf("unexpected projected source %+v", src)
				}
			}
			if entry.FetchBearerTokenFile != tokenPath || entry.CAFile != caPath || tokenPath == "" || caPath == "" {
				t.Errorf("fetch_bearer_token_file %q, ca_file %q; the mounted token is %q, the cluster CA %q", entry.FetchBearerTokenFile, entry.CAFile, tokenPath, caPath)
			}

			// The pods' ServiceAccount, and its discovery permission.
			sa, crb := k.serviceAccount, k.clusterRoleBinding
			if sa == nil || crb == nil {
				t.Fatalf("rendered kinds = %v, want a ServiceAccount and a ClusterRoleBinding", seen)
			}
			if pod.ServiceAccountName != tc.wantSA || sa.Name != tc.wantSA {
				t.Errorf("serviceAccountName %q, ServiceAccount %q; want %q", pod.ServiceAccountName, sa.Name, tc.wantSA)
			}
			if crb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:service-account-issuer-discovery"}) {
				t.Errorf("ClusterRoleBinding roleRef = %+v, want system:service-account-issuer-discovery", crb.RoleRef)
			}
			if len(crb.Subjects) != 1 || crb.Subjects[0] != (rbacv1.Subject{Kind: "ServiceAccount", Name: tc.wantSA, Namespace: ns}) {
				t.Errorf("ClusterRoleBinding subjects = %+v, want only ServiceAccount %s/%s", crb.Subjects, ns, tc.wantSA)
			}
			if !strings.Contains(crb.Name, ns) {
				t.Errorf("ClusterRoleBinding %q: a cluster-wide name without the namespace collides between releases of two namespaces", crb.Name)
			}

			// The config as jwksverify loads it, with the volume's files
			// where the kubelet puts them.
			dir := t.TempDir()
			writeCA(t, filepath.Join(dir, "ca.crt"))
			if err := os.WriteFile(filepath.Join(dir, "token"), []byte("a-projected-token\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			conf := strings.ReplaceAll(k.configMap.Data["config.yaml"], mount.MountPath+"/", dir+"/")
			path := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(jwksverifyBin(t), "check", "--config", path).CombinedOutput(); err != nil {
				t.Errorf("jwksverify check of the rendered config: %v\n%s", err, out)
			}
		})
	}
}

// TestHelmKubernetesServiceAccountIssuerRefuses: an enabled issuer without
// audiences (every token of the cluster for any audience) or with a key the
// chart sets in issuerConfig fails the render.
func TestHelmKubernetesServiceAccountIssuerRefuses(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"kubernetesServiceAccountIssuer.enabled=true", "kubernetesServiceAccountIssuer.audiences is required"},
		{"kubernetesServiceAccountIssuer.enabled=true,kubernetesServiceAccountIssuer.audiences={a},kubernetesServiceAccountIssuer.issuer=", "kubernetesServiceAccountIssuer.issuer is required"},
		{"kubernetesServiceAccountIssuer.enabled=true,kubernetesServiceAccountIssuer.audiences={a},kubernetesServiceAccountIssuer.issuerConfig.ca_file=/x", "issuerConfig.ca_file is set by the chart"},
	} {
		if out, err := helm(t, "template", "jv", chartDir, "--set", tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template --set %s = %v, want an error with %q\n%s", tc.set, err, tc.want, out)
		}
	}
	if out, err := helm(t, "lint", "--strict", chartDir, "--set", "kubernetesServiceAccountIssuer.enabled=true,kubernetesServiceAccountIssuer.audiences={my-api}"); err != nil {
		t.Errorf("helm lint --strict with kubernetesServiceAccountIssuer: %v\n%s", err, out)
	}
}

// writeCA writes a self-signed CA certificate (PEM) to path: a stand-in for
// the cluster's kube-root-ca.crt.
func writeCA(t *testing.T, path string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// jwksverifyBin builds the jwksverify binary of this checkout once per run.
func jwksverifyBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "jwksverify-deploy-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "jwksverify")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/jwksverify")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/jwksverify: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// TestHelmMint: with mint.secretName the chart mounts the Secret's private
// JWKS read-only (mode 0440, the pod's fsGroup), names it as
// config.mint.keys_file, and refuses a keys_file of the values or a mint
// section without its Secret.
func TestHelmMint(t *testing.T) {
	const set = "mint.secretName=jv-mint,config.mint.issuer=https://jwksverify.internal,config.mint.signing_kid=k1"
	k, _ := renderChart(t, set)
	var cfg struct {
		Mint map[string]string `yaml:"mint"`
	}
	if err := yaml.Unmarshal([]byte(k.configMap.Data["config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Mint["keys_file"] != "/etc/jwksverify-mint/mint.jwks" || cfg.Mint["signing_kid"] != "k1" {
		t.Errorf("config.yaml mint = %v", cfg.Mint)
	}
	pod := k.deployment.Spec.Template.Spec
	var mounted bool
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.Name == "mint-keys" && m.MountPath == "/etc/jwksverify-mint" && m.ReadOnly {
			mounted = true
		}
	}
	var secret bool
	for _, v := range pod.Volumes {
		if s := v.Secret; v.Name == "mint-keys" && s != nil && s.SecretName == "jv-mint" && s.DefaultMode != nil && *s.DefaultMode == 0o440 &&
			len(s.Items) == 1 && s.Items[0].Key == "mint.jwks" {
			secret = true
		}
	}
	if !mounted || !secret || pod.SecurityContext.FSGroup == nil || *pod.SecurityContext.FSGroup != 65532 {
		t.Errorf("mint keys mounted %v, Secret volume %v, fsGroup %v", mounted, secret, pod.SecurityContext.FSGroup)
	}
	if out, err := helm(t, "lint", "--strict", chartDir, "--set", set); err != nil {
		t.Errorf("helm lint --strict with mint: %v\n%s", err, out)
	}
	for _, tc := range []struct{ set, want string }{
		{set + ",config.mint.keys_file=/x", "config.mint.keys_file is set by the chart"},
		{"config.mint.issuer=https://jwksverify.internal", "set mint.secretName"},
		{"mint.secretName=jv-mint", "config.mint is not"},
	} {
		if out, err := helm(t, "template", "jv", chartDir, "--set", tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template --set %s = %v, want an error with %q\n%s", tc.set, err, tc.want, out)
		}
	}
	if k, _ := renderChart(t, ""); k.deployment.Spec.Template.Spec.SecurityContext.FSGroup != nil {
		t.Error("without mint the pod has an fsGroup")
	}
}
