// Package deploy holds no Go code: its tests keep the deployment files in the
// repository's deploy/ directory (and its Dockerfile) honest by decoding them
// into the real API types — go-control-plane's Envoy bootstrap and
// k8s.io/api — so a typo or a drifted port fails CI instead of a rollout.
// It lives in the integration test module so that those types stay out of
// the library's go.mod.
package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	headermutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"go.uber.org/goleak"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if binPath != "" {
			os.RemoveAll(filepath.Dir(binPath)) // jwksverifyBin's build
		}
		os.Exit(code)
	}))
}

// The repository's root and its deploy/ directory, from this package's
// directory (where go test runs it).
const (
	repoRoot  = "../.."
	deployDir = repoRoot + "/deploy"
)

// Ports every deployment file must agree on: jwksverify's listen and
// grpc_listen.
const (
	httpPort  = 8080
	grpcPort  = 9001
	adminPort = 9090 // admin_listen: probes and /metrics
)

// The go-control-plane packages whose types envoy.yaml's typed_config
// members name. Importing them registers the types in protoregistry, which
// protojson resolves Any values from; this list keeps the imports used.
var envoyTypes = []proto.Message{
	&hcmv3.HttpConnectionManager{}, &extauthzv3.ExtAuthz{}, &routerv3.Router{},
	&headermutationv3.HeaderMutation{}, &upstreamhttpv3.HttpProtocolOptions{},
}

// validator is what protoc-gen-validate generates on every go-control-plane
// message: the constraints Envoy itself enforces on load.
type validator interface{ ValidateAll() error }

func loadEnvoy(t *testing.T) *bootstrapv3.Bootstrap {
	t.Helper()
	y, err := os.ReadFile(deployDir + "/envoy/envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := sigsyaml.YAMLToJSONStrict(y)
	if err != nil {
		t.Fatalf("envoy.yaml: YAMLToJSONStrict() = %v", err)
	}
	var b bootstrapv3.Bootstrap
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(j, &b); err != nil {
		t.Fatalf("envoy.yaml: protojson.Unmarshal(Bootstrap) = %v", err)
	}
	return &b
}

// validateDeep validates m and, recursively, every message packed in an Any
// inside it (protoc-gen-validate does not look into Any values).
func validateDeep(t *testing.T, m proto.Message) {
	t.Helper()
	if v, ok := m.(validator); ok {
		if err := v.ValidateAll(); err != nil {
			t.Errorf("%s.ValidateAll() = %v", m.ProtoReflect().Descriptor().FullName(), err)
		}
	}
	var walk func(protoreflect.Message)
	walk = func(pm protoreflect.Message) {
		if a, ok := pm.Interface().(*anypb.Any); ok {
			inner, err := a.UnmarshalNew()
			if err != nil {
				t.Errorf("Any %s: UnmarshalNew() = %v", a.GetTypeUrl(), err)
				return
			}
			validateDeep(t, inner)
			return
		}
		pm.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					walk(v.List().Get(i).Message())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message())
					return true
				})
			case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
				walk(v.Message())
			}
			return true
		})
	}
	walk(m.ProtoReflect())
}

func unpack[T proto.Message](t *testing.T, a *anypb.Any, into T) T {
	t.Helper()
	if err := a.UnmarshalTo(into); err != nil {
		t.Fatalf("typed_config %s: UnmarshalTo(%T) = %v", a.GetTypeUrl(), into, err)
	}
	return into
}

// envoyListener is what the test reads out of one listener's HCM.
type envoyListener struct {
	filters  []string // HTTP filter names, in order
	authz    *extauthzv3.ExtAuthz
	removed  []string // request headers the header_mutation filter removes
	clusters []string // route clusters
}

func readListener(t *testing.T, l *listenerv3.Listener) envoyListener {
	t.Helper()
	var out envoyListener
	if len(l.GetFilterChains()) != 1 || len(l.GetFilterChains()[0].GetFilters()) != 1 {
		t.Fatalf("listener %s: want one filter chain with one network filter (the HCM)", l.GetName())
	}
	hcm := unpack(t, l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig(), &hcmv3.HttpConnectionManager{})
	for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			out.clusters = append(out.clusters, r.GetRoute().GetCluster())
		}
	}
	for _, f := range hcm.GetHttpFilters() {
		out.filters = append(out.filters, f.GetName())
		switch f.GetName() {
		case "envoy.filters.http.ext_authz":
			out.authz = unpack(t, f.GetTypedConfig(), &extauthzv3.ExtAuthz{})
		case "envoy.filters.http.header_mutation":
			hm := unpack(t, f.GetTypedConfig(), &headermutationv3.HeaderMutation{})
			for _, m := range hm.GetMutations().GetRequestMutations() {
				out.removed = append(out.removed, m.GetRemove())
			}
		}
	}
	return out
}

func clusterPort(t *testing.T, c *clusterv3.Cluster) uint32 {
	t.Helper()
	eps := c.GetLoadAssignment().GetEndpoints()
	if len(eps) != 1 || len(eps[0].GetLbEndpoints()) != 1 {
		t.Fatalf("cluster %s: want exactly one endpoint", c.GetName())
	}
	return eps[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetPortValue()
}

func TestEnvoyConfig(t *testing.T) {
	for _, m := range envoyTypes {
		if m.ProtoReflect().Descriptor().FullName() == "" {
			t.Fatalf("type %T not registered", m)
		}
	}
	b := loadEnvoy(t)
	validateDeep(t, b)

	clusters := map[string]*clusterv3.Cluster{}
	for _, c := range b.GetStaticResources().GetClusters() {
		clusters[c.GetName()] = c
	}
	identity := configMapClaimHeaders(t)

	modes := map[string]bool{}
	for _, l := range b.GetStaticResources().GetListeners() {
		t.Run(l.GetName(), func(t *testing.T) {
			got := readListener(t, l)
			want := []string{"envoy.filters.http.header_mutation", "envoy.filters.http.ext_authz", "envoy.filters.http.router"}
			if !slices.Equal(got.filters, want) {
				t.Fatalf("http_filters = %v, want %v (identity headers stripped before ext_authz, router last)", got.filters, want)
			}
			for _, h := range identity {
				if !slices.Contains(got.removed, h) {
					t.Errorf("header_mutation removes %v, want it to remove client-sent %q", got.removed, h)
				}
			}
			for _, c := range got.clusters {
				if clusters[c] == nil {
					t.Errorf("route names cluster %q, which is not defined", c)
				}
			}
			a := got.authz
			if a.GetFailureModeAllow() {
				t.Error("failure_mode_allow = true, want false (fail closed)")
			}
			if code := a.GetStatusOnError().GetCode(); code != typev3.StatusCode_ServiceUnavailable {
				t.Errorf("status_on_error = %v, want ServiceUnavailable (keys unavailable is a fault, not a deny)", code)
			}
			if v := a.GetTransportApiVersion().String(); v != "V3" {
				t.Errorf("transport_api_version = %s, want V3", v)
			}
			switch {
			case a.GetGrpcService() != nil:
				modes["grpc"] = true
				name := a.GetGrpcService().GetEnvoyGrpc().GetClusterName()
				c := clusters[name]
				if c == nil {
					t.Fatalf("grpc_service cluster %q is not defined", name)
				}
				if port := clusterPort(t, c); port != grpcPort {
					t.Errorf("cluster %s port = %d, want %d (grpc_listen)", name, port, grpcPort)
				}
				opts := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
				if opts == nil || unpack(t, opts, &upstreamhttpv3.HttpProtocolOptions{}).GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
					t.Errorf("cluster %s does not speak HTTP/2: gRPC needs it", name)
				}
				if c.GetHealthChecks()[0].GetGrpcHealthCheck() == nil {
					t.Errorf("cluster %s: want a grpc.health.v1 health check", name)
				}
			case a.GetHttpService() != nil:
				modes["http"] = true
				hs := a.GetHttpService()
				if hs.GetPathPrefix() != "/v1/authz" {
					t.Errorf("path_prefix = %q, want /v1/authz (Envoy appends the original path)", hs.GetPathPrefix())
				}
				name := hs.GetServerUri().GetCluster()
				c := clusters[name]
				if c == nil {
					t.Fatalf("http_service cluster %q is not defined", name)
				}
				if port := clusterPort(t, c); port != httpPort {
					t.Errorf("cluster %s port = %d, want %d (listen)", name, port, httpPort)
				}
				if p := c.GetHealthChecks()[0].GetHttpHealthCheck().GetPath(); p != "/readyz" {
					t.Errorf("cluster %s health check path = %q, want /readyz", name, p)
				}
				var up []string
				for _, p := range hs.GetAuthorizationResponse().GetAllowedUpstreamHeaders().GetPatterns() {
					up = append(up, p.GetExact())
				}
				for _, h := range identity {
					if !slices.Contains(up, h) {
						t.Errorf("allowed_upstream_headers = %v, want %q (claims_to_headers)", up, h)
					}
				}
				var client []string
				for _, p := range hs.GetAuthorizationResponse().GetAllowedClientHeaders().GetPatterns() {
					client = append(client, p.GetExact())
				}
				if !slices.Contains(client, "www-authenticate") {
					t.Errorf("allowed_client_headers = %v, want www-authenticate", client)
				}
			default:
				t.Fatal("ext_authz has neither grpc_service nor http_service")
			}
		})
	}
	if !modes["grpc"] || !modes["http"] {
		t.Errorf("ext_authz modes = %v, want both grpc and http", modes)
	}
}

// TestEnvoyConfigRejectsTypos proves the decoding above is strict: the same
// file with one misspelled field must not decode.
func TestEnvoyConfigRejectsTypos(t *testing.T) {
	y, err := os.ReadFile(deployDir + "/envoy/envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"misspelled-field", "\n              failure_mode_allow:", "\n              failure_mode_alow:"},
		{"misspelled-top-level", "\nstatic_resources:", "\nstatic_resource:"},
		{"unknown-type", "ext_authz.v3.ExtAuthz", "ext_authz.v3.ExtAuth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Replace(y, []byte(tc.from), []byte(tc.to), 1)
			if bytes.Equal(bad, y) {
				t.Fatalf("%q not found in envoy.yaml", tc.from)
			}
			j, err := sigsyaml.YAMLToJSON(bad)
			if err != nil {
				t.Fatal(err)
			}
			if err := protojson.Unmarshal(j, &bootstrapv3.Bootstrap{}); err == nil {
				t.Errorf("protojson.Unmarshal(%s) = nil, want an error", tc.name)
			}
		})
	}
}

// k8sObjects is every document of deploy/kubernetes, decoded strictly.
type k8sObjects struct {
	deployment *appsv1.Deployment
	service    *corev1.Service
	configMap  *corev1.ConfigMap
	hpa        *autoscalingv2.HorizontalPodAutoscaler
	pdb        *policyv1.PodDisruptionBudget
	// serviceMonitor is the Prometheus Operator's (the Helm chart's, when
	// enabled); nil in kubernetes/.
	serviceMonitor *serviceMonitor
	// serviceAccount and clusterRoleBinding are the Helm chart's with
	// kubernetesServiceAccountIssuer; nil in kubernetes/.
	serviceAccount     *corev1.ServiceAccount
	clusterRoleBinding *rbacv1.ClusterRoleBinding
	// networkPolicy is the Helm chart's with networkPolicy.enabled.
	networkPolicy *networkingv1.NetworkPolicy
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

func loadKubernetes(t *testing.T) k8sObjects {
	t.Helper()
	files, err := filepath.Glob(deployDir + "/kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no kubernetes/*.yaml: %v", err)
	}
	var out k8sObjects
	seen := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		decodeManifests(t, f, data, &out, seen)
	}
	out.requireCore(t, seen)
	return out
}

// decodeManifests decodes each YAML document of data (from source) strictly
// into its API type in out, failing on an unknown kind, an unknown field or
// a second object of a kind (seen: kind to source).
func decodeManifests(t *testing.T, source string, data []byte, out *k8sObjects, seen map[string]string) {
	t.Helper()
	for i, doc := range docSeparator.Split(string(data), -1) {
		var meta struct{ APIVersion, Kind string }
		if err := sigsyaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s doc %d: %v", source, i, err)
		}
		if meta.Kind == "" {
			continue // an empty document (comments only)
		}
		key := meta.APIVersion + " " + meta.Kind
		if prev, dup := seen[key]; dup {
			t.Fatalf("%s: second %s (first in %s)", source, key, prev)
		}
		seen[key] = source
		var obj any
		switch key {
		case "apps/v1 Deployment":
			out.deployment = &appsv1.Deployment{}
			obj = out.deployment
		case "v1 Service":
			out.service = &corev1.Service{}
			obj = out.service
		case "v1 ConfigMap":
			out.configMap = &corev1.ConfigMap{}
			obj = out.configMap
		case "autoscaling/v2 HorizontalPodAutoscaler":
			out.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
			obj = out.hpa
		case "policy/v1 PodDisruptionBudget":
			out.pdb = &policyv1.PodDisruptionBudget{}
			obj = out.pdb
		case "monitoring.coreos.com/v1 ServiceMonitor":
			out.serviceMonitor = &serviceMonitor{}
			obj = out.serviceMonitor
		case "v1 ServiceAccount":
			out.serviceAccount = &corev1.ServiceAccount{}
			obj = out.serviceAccount
		case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
			out.clusterRoleBinding = &rbacv1.ClusterRoleBinding{}
			obj = out.clusterRoleBinding
		case "networking.k8s.io/v1 NetworkPolicy":
			out.networkPolicy = &networkingv1.NetworkPolicy{}
			obj = out.networkPolicy
		default:
			t.Fatalf("%s doc %d: unexpected %s", source, i, key)
		}
		if err := sigsyaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s doc %d (%s): UnmarshalStrict() = %v", source, i, key, err)
		}
	}
}

// requireCore fails unless o holds the five kinds every deployment has.
func (o k8sObjects) requireCore(t *testing.T, seen map[string]string) {
	t.Helper()
	if o.deployment == nil || o.service == nil || o.configMap == nil || o.hpa == nil || o.pdb == nil {
		t.Fatalf("kinds = %v, want Deployment, Service, ConfigMap, HorizontalPodAutoscaler, PodDisruptionBudget", seen)
	}
}

// configMapConfig is the ConfigMap's config.yaml, parsed as plain YAML. The
// real loader lives in package main (cmd/jwksverify) and cannot be imported,
// so this checks what the manifests depend on rather than every key;
// integration/e2e_kubernetes_test.go runs the binary with the same file.
type configMapConfig struct {
	ShutdownDelay   string       `yaml:"shutdown_delay"`
	ShutdownTimeout string       `yaml:"shutdown_timeout"`
	Listen          string       `yaml:"listen"`
	GRPCListen      string       `yaml:"grpc_listen"`
	AdminListen     string       `yaml:"admin_listen"`
	TLS             configMapTLS `yaml:"tls"`
	GRPCTLS         configMapTLS `yaml:"grpc_tls"`
	StateDir        string       `yaml:"state_dir"`
	Issuers         []struct {
		Issuer          string            `yaml:"issuer"`
		Discovery       bool              `yaml:"discovery"`
		JWKSURL         string            `yaml:"jwks_url"`
		JWKSFile        string            `yaml:"jwks_file"`
		ClaimsToHeaders map[string]string `yaml:"claims_to_headers"`
	} `yaml:"issuers"`
}

// configMapTLS is a tls or grpc_tls section.
type configMapTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

func parseConfigMap(t *testing.T, cm *corev1.ConfigMap) configMapConfig {
	t.Helper()
	raw, ok := cm.Data["config.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no config.yaml", cm.Name)
	}
	var c configMapConfig
	if err := yaml.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatalf("ConfigMap config.yaml: %v", err)
	}
	return c
}

// configMapClaimHeaders returns the lower-cased headers the ConfigMap's
// issuers map claims to: what every proxy must strip from clients.
func configMapClaimHeaders(t *testing.T) []string {
	t.Helper()
	var hs []string
	for _, is := range parseConfigMap(t, loadKubernetes(t).configMap).Issuers {
		for _, h := range is.ClaimsToHeaders {
			if h = strings.ToLower(h); !slices.Contains(hs, h) {
				hs = append(hs, h)
			}
		}
	}
	if len(hs) == 0 {
		t.Fatal("ConfigMap maps no claims to headers")
	}
	return hs
}

// TestKubernetesGracePeriod checks that the pod's termination grace period
// covers the service's shutdown: reporting draining for shutdown_delay, then
// draining for up to shutdown_timeout. A shorter period gets the process
// SIGKILLed with requests in flight.
// drainTime is how long the service takes to stop after SIGTERM, for the
// config's shutdown_delay and shutdown_timeout ("" = their defaults, 0s and
// 15s): the pod's terminationGracePeriodSeconds must exceed it.
func drainTime(t *testing.T, delay, timeout string) time.Duration {
	t.Helper()
	var total time.Duration
	for _, d := range []struct{ v, def string }{{delay, "0s"}, {timeout, "15s"}} {
		if d.v == "" {
			d.v = d.def
		}
		x, err := time.ParseDuration(d.v)
		if err != nil {
			t.Fatalf("config duration %q: %v", d.v, err)
		}
		total += x
	}
	return total
}

func TestKubernetesGracePeriod(t *testing.T) {
	k := loadKubernetes(t)
	c := parseConfigMap(t, k.configMap)
	need := drainTime(t, c.ShutdownDelay, c.ShutdownTimeout)
	gp := k.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds
	if gp == nil {
		t.Fatalf("terminationGracePeriodSeconds unset (Kubernetes default 30s), want it stated and ≥ %v", need)
	}
	if got := time.Duration(*gp) * time.Second; got <= need {
		t.Errorf("terminationGracePeriodSeconds = %v, want more than shutdown_delay + shutdown_timeout = %v", got, need)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	p, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("address %q has no port", addr)
	}
	return p
}

func TestKubernetes(t *testing.T) {
	k := loadKubernetes(t)
	d := k.deployment
	labels := d.Spec.Template.Labels

	t.Run("deployment-selector-matches-template", func(t *testing.T) {
		for key, v := range d.Spec.Selector.MatchLabels {
			if labels[key] != v {
				t.Errorf("selector %s=%s not on the pod template (labels %v)", key, v, labels)
			}
		}
	})

	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("containers = %d, want 1", len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}

	t.Run("container-ports", func(t *testing.T) {
		if ports["http"] != httpPort || ports["grpc"] != grpcPort || ports["admin"] != adminPort {
			t.Errorf("container ports = %v, want http %d, grpc %d and admin %d", ports, httpPort, grpcPort, adminPort)
		}
	})

	for _, tc := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{
		{"readiness-probe", c.ReadinessProbe, "/readyz"},
		{"liveness-probe", c.LivenessProbe, "/healthz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.probe == nil || tc.probe.HTTPGet == nil {
				t.Fatalf("%s: want an httpGet probe", tc.name)
			}
			g := tc.probe.HTTPGet
			if g.Path != tc.path {
				t.Errorf("%s path = %q, want %q", tc.name, g.Path, tc.path)
			}
			if port := resolvePort(g.Port, ports); port != adminPort {
				t.Errorf("%s port = %v (%d), want the admin port %d (admin_listen)", tc.name, g.Port.String(), port, adminPort)
			}
		})
	}

	t.Run("resources", func(t *testing.T) {
		req := c.Resources.Requests
		if req.Cpu().IsZero() || req.Memory().IsZero() {
			t.Errorf("resource requests = %v, want cpu and memory", req)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Errorf("resource limits = %v, want a memory limit", c.Resources.Limits)
		}
	})

	t.Run("non-root-read-only", func(t *testing.T) {
		psc := d.Spec.Template.Spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Error("pod securityContext.runAsNonRoot != true")
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Error("container securityContext: want readOnlyRootFilesystem and no privilege escalation")
		}
	})

	t.Run("prometheus-annotations", func(t *testing.T) {
		a := d.Spec.Template.Annotations
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/path"] != "/metrics" ||
			a["prometheus.io/port"] != strconv.Itoa(adminPort) {
			t.Errorf("pod annotations = %v, want prometheus.io scrape/path/port for /metrics on %d", a, adminPort)
		}
	})

	t.Run("configmap-mounted-and-valid", func(t *testing.T) {
		var vol string
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil && v.ConfigMap.Name == k.configMap.Name {
				vol = v.Name
			}
		}
		var mounted bool
		for _, m := range c.VolumeMounts {
			if m.Name == vol && m.MountPath == "/etc/jwksverify" {
				mounted = true
			}
		}
		if vol == "" || !mounted {
			t.Errorf("ConfigMap %s is not mounted at /etc/jwksverify (the image's --config directory)", k.configMap.Name)
		}
		cfg := parseConfigMap(t, k.configMap)
		if len(cfg.Issuers) == 0 {
			t.Fatal("config.yaml has no issuers")
		}
		for i, is := range cfg.Issuers {
			n := 0
			for _, set := range []bool{is.Discovery, is.JWKSURL != "", is.JWKSFile != ""} {
				if set {
					n++
				}
			}
			if is.Issuer == "" || n != 1 {
				t.Errorf("issuer %d: want an issuer and exactly one key source", i)
			}
		}
		if !strings.HasPrefix(cfg.Listen, "0.0.0.0:") || portOf(t, cfg.Listen) != httpPort {
			t.Errorf("listen = %q, want 0.0.0.0:%d (reachable by probes and the Service)", cfg.Listen, httpPort)
		}
		if !strings.HasPrefix(cfg.GRPCListen, "0.0.0.0:") || portOf(t, cfg.GRPCListen) != grpcPort {
			t.Errorf("grpc_listen = %q, want 0.0.0.0:%d", cfg.GRPCListen, grpcPort)
		}
		if !strings.HasPrefix(cfg.AdminListen, "0.0.0.0:") || portOf(t, cfg.AdminListen) != adminPort {
			t.Errorf("admin_listen = %q, want 0.0.0.0:%d (probes and scraping)", cfg.AdminListen, adminPort)
		}
		// TLS from the mounted Secret, for both listeners.
		for name, tl := range map[string]configMapTLS{"tls": cfg.TLS, "grpc_tls": cfg.GRPCTLS} {
			if tl.CertFile == "" || tl.KeyFile == "" {
				t.Errorf("%s: want cert_file and key_file (TLS from a Secret)", name)
				continue
			}
			var secretVol string
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Secret != nil && v.Secret.SecretName != "" {
					secretVol = v.Name
				}
			}
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == secretVol && strings.HasPrefix(tl.CertFile, m.MountPath+"/") && strings.HasPrefix(tl.KeyFile, m.MountPath+"/")
			}) {
				t.Errorf("%s files %s, %s are not in a mounted Secret", name, tl.CertFile, tl.KeyFile)
			}
		}
		if cfg.StateDir != "" && !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.MountPath == cfg.StateDir && !m.ReadOnly
		}) {
			t.Errorf("state_dir %s is not a writable mount (the root filesystem is read-only)", cfg.StateDir)
		}
	})

	t.Run("service", func(t *testing.T) {
		for key, v := range k.service.Spec.Selector {
			if labels[key] != v {
				t.Errorf("Service selector %s=%s does not match the pods (labels %v)", key, v, labels)
			}
		}
		got := map[string]int{}
		for _, p := range k.service.Spec.Ports {
			got[p.Name] = resolvePort(p.TargetPort, ports)
		}
		if got["http"] != httpPort || got["grpc"] != grpcPort {
			t.Errorf("Service target ports = %v, want http %d and grpc %d", got, httpPort, grpcPort)
		}
	})

	t.Run("hpa-targets-deployment", func(t *testing.T) {
		ref := k.hpa.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.Name != d.Name || ref.APIVersion != "apps/v1" {
			t.Errorf("HPA scaleTargetRef = %+v, want apps/v1 Deployment %s", ref, d.Name)
		}
		if k.hpa.Spec.MinReplicas == nil || *k.hpa.Spec.MinReplicas < 2 || k.hpa.Spec.MaxReplicas < *k.hpa.Spec.MinReplicas {
			t.Errorf("HPA replicas = %v..%d, want at least 2 and max >= min", k.hpa.Spec.MinReplicas, k.hpa.Spec.MaxReplicas)
		}
		if len(k.hpa.Spec.Metrics) == 0 {
			t.Error("HPA has no metrics")
		}
	})

	t.Run("pdb-selects-deployment", func(t *testing.T) {
		sel := k.pdb.Spec.Selector
		if sel == nil || len(sel.MatchLabels) == 0 {
			t.Fatal("PDB has no selector")
		}
		for key, v := range sel.MatchLabels {
			if labels[key] != v {
				t.Errorf("PDB selector %s=%s does not match the pods (labels %v)", key, v, labels)
			}
		}
		if k.pdb.Spec.MinAvailable == nil && k.pdb.Spec.MaxUnavailable == nil {
			t.Error("PDB sets neither minAvailable nor maxUnavailable")
		}
		if m := k.pdb.Spec.MinAvailable; m != nil && m.Type == intstr.Int && k.hpa.Spec.MinReplicas != nil && m.IntVal >= *k.hpa.Spec.MinReplicas {
			t.Errorf("PDB minAvailable %d >= HPA minReplicas %d: no pod could ever be evicted", m.IntVal, *k.hpa.Spec.MinReplicas)
		}
	})
}

// resolvePort turns a named or numbered port into its number.
func resolvePort(p intstr.IntOrString, named map[string]int32) int {
	if p.Type == intstr.String {
		return int(named[p.StrVal])
	}
	return int(p.IntVal)
}

// TestKubernetesRejectsTypos proves the decoding above is strict.
func TestKubernetesRejectsTypos(t *testing.T) {
	data, err := os.ReadFile(deployDir + "/kubernetes/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(data, []byte("readinessProbe:"), []byte("readynessProbe:"), 1)
	if bytes.Equal(bad, data) {
		t.Fatal("readinessProbe not found in deployment.yaml")
	}
	if err := sigsyaml.UnmarshalStrict(bad, &appsv1.Deployment{}); err == nil {
		t.Error("UnmarshalStrict(misspelled readinessProbe) = nil, want an error")
	}
}

// TestDockerfile checks the Dockerfile's essentials textually (Docker does
// not run here): a static, trimmed build (the Makefile's build target, which
// the Dockerfile runs); a distroless or scratch final stage; a non-root
// user; the ports and entrypoint the other files assume.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile(repoRoot + "/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	mk, err := os.ReadFile(repoRoot + "/Makefile")
	if err != nil {
		t.Fatal(err)
	}
	build := regexp.MustCompile(`(?m)^build:\n\t([^\n]*)`).FindStringSubmatch(string(mk))
	if build == nil {
		t.Fatal("the Makefile has no build target")
	}
	var froms []string
	for line := range strings.Lines(df) {
		if f := strings.Fields(line); len(f) >= 2 && strings.EqualFold(f[0], "FROM") {
			froms = append(froms, f[1])
		}
	}
	final := df[strings.LastIndex(df, "\nFROM "):]
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"multi-stage", len(froms) >= 2 && strings.HasPrefix(froms[0], "golang:1.26")},
		{"final-stage-distroless-or-scratch", len(froms) > 0 &&
			(strings.HasPrefix(froms[len(froms)-1], "gcr.io/distroless/static") || froms[len(froms)-1] == "scratch")},
		{"runs-make-build", regexp.MustCompile(`(?m)^RUN make build `).MatchString(df)},
		{"static-build", strings.HasPrefix(build[1], "CGO_ENABLED=0 ")},
		{"trimpath", strings.Contains(build[1], " -trimpath ")},
		{"non-root-user", regexp.MustCompile(`(?m)^USER (nonroot|65532)`).MatchString(final)},
		{"exposes-ports", strings.Contains(df, "EXPOSE "+strconv.Itoa(httpPort)+" "+strconv.Itoa(grpcPort))},
		{"entrypoint", strings.Contains(final, `ENTRYPOINT ["/jwksverify","serve","--config","/etc/jwksverify/config.yaml"]`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Errorf("Dockerfile check %s failed", tc.name)
			}
		})
	}
}

// TestDockerignoreKeepsBuildInputs checks that .dockerignore excludes none
// of the files `go build ./cmd/jwksverify` needs (sources and embedded
// files of every package of this module it imports).
func TestDockerignoreKeepsBuildInputs(t *testing.T) {
	patterns := dockerignorePatterns(t)
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,GoFiles,EmbedFiles,Module", "./cmd/jwksverify")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./cmd/jwksverify: %v", err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	need := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			Dir                 string
			GoFiles, EmbedFiles []string
			Module              *struct{ Path string }
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || p.Module.Path != "github.com/jwksverify/jwksverify" {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range slices.Concat(p.GoFiles, p.EmbedFiles) {
			need = append(need, filepath.ToSlash(filepath.Join(rel, f)))
		}
	}
	if len(need) < 3 {
		t.Fatalf("go list found no sources of cmd/jwksverify")
	}
	for _, f := range need {
		if p := ignoredBy(f, patterns); p != "" {
			t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", p, f)
		}
	}
}

// TestDockerignoreDropsWorkspace checks that the build context does not
// carry a go.work naming a module that .dockerignore leaves out (bench/,
// integration/): go build fails on a workspace whose modules are missing.
func TestDockerignoreDropsWorkspace(t *testing.T) {
	if _, err := os.Stat(repoRoot + "/go.work"); err != nil {
		t.Fatalf("go.work: %v (the README's test command needs it)", err)
	}
	cmd := exec.Command("go", "work", "edit", "-json")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	var work struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(out, &work); err != nil {
		t.Fatal(err)
	}
	patterns := dockerignorePatterns(t)
	var dropped []string
	for _, u := range work.Use {
		if dir := filepath.ToSlash(filepath.Clean(u.DiskPath)); ignoredBy(dir, patterns) != "" {
			dropped = append(dropped, dir)
		}
	}
	if len(dropped) == 0 {
		t.Fatal("no go.work module is left out of the build context; this test expects bench/ and integration/ to be")
	}
	for _, f := range []string{"go.work", "go.work.sum"} {
		if ignoredBy(f, patterns) == "" {
			t.Errorf(".dockerignore keeps %s, whose modules %v it leaves out", f, dropped)
		}
	}
}

// dockerignorePatterns returns the patterns of the repository's .dockerignore.
func dockerignorePatterns(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(repoRoot + "/.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	return patterns
}

// ignoredBy returns the .dockerignore pattern that excludes path, or "". It
// understands what .dockerignore here uses: names matched against the path
// and each of its parent directories, and "**/" prefixes matched against
// the base name.
func ignoredBy(path string, patterns []string) string {
	for _, p := range patterns {
		if rest, ok := strings.CutPrefix(p, "**/"); ok {
			if m, _ := filepath.Match(rest, filepath.Base(path)); m {
				return p
			}
			continue
		}
		parts := strings.Split(path, "/")
		for i := range parts {
			if m, _ := filepath.Match(p, strings.Join(parts[:i+1], "/")); m {
				return p
			}
		}
	}
	return ""
}
