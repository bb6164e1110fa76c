package deploy

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelmPerProcessStateRefused: the chart runs jwksverify as pods behind
// one Service (two at least by default, an HPA, a surge pod at every
// rollout), each with its state_dir on an emptyDir. State the configuration
// keeps per process there breaks the promises of OPERATIONS.md and CONFIG.md:
//
//   - revocation.store: memory (the default once revocation is on): an entry
//     added through the Service's admin port, a back-channel logout or an SSF
//     event is held by the one pod that took it (the others let the revoked
//     token through), and the emptyDir goes with the pod, so the next
//     rollout (every config change: checksum/config), eviction or drain
//     loses every acknowledged revocation ("it covers one process: behind a
//     load balancer use store: redis");
//   - dpop.replay_store: memory with DPoP on and more than one replica: a
//     proof replayed at another replica passes ("use redis for more than one
//     replica").
//
// The render must fail, naming the fix, as it does for the other unsafe
// value combinations; the controls (Redis-backed stores, DPoP on one
// replica) render.
func TestHelmPerProcessStateRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const issuer = `config:
  issuers:
    - issuer: https://idp.example.com/
      discovery: true
      audiences: [api://orders]
`
	revocationMemory := write("revocation-memory.yaml", issuer+"  revocation: {}\n")
	revocationMemoryNamed := write("revocation-memory-named.yaml", issuer+"  revocation: {store: memory, retention: 24h}\n")
	revocationRedis := write("revocation-redis.yaml", issuer+"  revocation: {store: redis}\n")
	dpopMemory := write("dpop-memory.yaml", issuer+"      sender_constraint: {dpop: required}\n  dpop: {max_age: 60s}\n")
	dpopDefault := write("dpop-default.yaml", issuer+"      sender_constraint: {dpop: optional}\n")
	dpopRedis := write("dpop-redis.yaml", issuer+"      sender_constraint: {dpop: required}\n  dpop: {replay_store: redis}\n")
	const redis = "redis.mode=url,redis.url=redis://redis:6379/0"

	for _, tc := range []struct {
		name, values, set, want string // want "": renders
	}{
		{"revocation-memory-default-store", revocationMemory, "", "config.revocation"},
		{"revocation-memory", revocationMemoryNamed, "", "config.revocation"},
		{"revocation-memory-one-replica", revocationMemoryNamed, "autoscaling.enabled=false,replicas=1,podDisruptionBudget.enabled=false", "config.revocation"},
		{"dpop-memory-hpa", dpopMemory, "", "dpop.replay_store"},
		{"dpop-default-store-replicas", dpopDefault, "autoscaling.enabled=false,replicas=3", "dpop.replay_store"},
		// Controls.
		{"revocation-redis", revocationRedis, redis, ""},
		{"dpop-redis", dpopRedis, redis, ""},
		{"dpop-memory-one-replica", dpopMemory, "autoscaling.enabled=false,replicas=1,podDisruptionBudget.enabled=false", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "jv", chartDir, "-f", tc.values}
			if tc.set != "" {
				args = append(args, "--set", tc.set)
			}
			out, err := helm(t, args...)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("helm %s: %v", strings.Join(args[3:], " "), err)
			case tc.want != "" && err == nil:
				i := strings.Index(out, "config.yaml: |")
				t.Errorf("helm %s rendered per-process state behind a Service (want an error naming %s):\n%s",
					strings.Join(args[3:], " "), tc.want, out[i:i+min(600, len(out)-i)])
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("helm %s = %v, want an error naming %s", strings.Join(args[3:], " "), err, tc.want)
			}
		})
	}
}

// TestHelmServiceKeepsAdminPortOff: the Service is the address every caller
// of the auth API has. The plain manifests leave the admin port off it
// ("Prometheus scrapes pods"); the chart put it there always, so /metrics,
// /v1/issuers and, with revocation, the revocations admin API answered at
// <release>:9090 to every caller of the Service. Only a ServiceMonitor (which
// scrapes through the Service) needs it there.
func TestHelmServiceKeepsAdminPortOff(t *testing.T) {
	for _, tc := range []struct {
		set       string
		wantAdmin bool
	}{
		{"", false},
		{"tls.secretName=jwksverify-tls", false},
		{"serviceMonitor.enabled=true", true},
	} {
		k, _ := renderChart(t, tc.set)
		var admin bool
		for _, p := range k.service.Spec.Ports {
			if p.Name == "admin" || p.Port == 9090 {
				admin = true
			}
		}
		if admin != tc.wantAdmin {
			t.Errorf("helm template --set %q: the Service exposes the admin port = %v, want %v (ports %+v)", tc.set, admin, tc.wantAdmin, k.service.Spec.Ports)
		}
	}
}

// TestHelmGRPCAppProtocol: the gRPC port says kubernetes.io/h2c (HTTP/2
// without TLS, KEP-3726) only when it is; with tls.secretName the listener
// speaks TLS, and a mesh or Gateway honouring appProtocol would open
// cleartext HTTP/2 to it and fail every Check. No standard value names
// HTTP/2 over TLS, so none is given then.
func TestHelmGRPCAppProtocol(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"", "kubernetes.io/h2c"},
		{"tls.secretName=jwksverify-tls", ""},
	} {
		k, _ := renderChart(t, tc.set)
		var got string
		found := false
		for _, p := range k.service.Spec.Ports {
			if p.Name == "grpc" {
				found = true
				if p.AppProtocol != nil {
					got = *p.AppProtocol
				}
			}
		}
		if !found || got != tc.want {
			t.Errorf("helm template --set %q: the gRPC port's appProtocol = %q (found %v), want %q", tc.set, got, found, tc.want)
		}
	}
}

// TestHelmNetworkPolicy: with networkPolicy.enabled the chart's pods take
// the auth ports from networkPolicy.from (anywhere when empty) and the
// admin port — /metrics, /v1/issuers, the revocations admin API — only
// from networkPolicy.adminFrom (from no pod when empty: the kubelet's
// probes come from the node, which a NetworkPolicy does not block).
func TestHelmNetworkPolicy(t *testing.T) {
	type rule struct {
		ports []string
		from  int // peers; 0: every source
	}
	tests := []struct {
		name string
		set  string
		want []rule // nil: no NetworkPolicy
	}{
		{"off-by-default", "", nil},
		{"admin-from-none", "networkPolicy.enabled=true", []rule{{[]string{"http", "grpc"}, 0}}},
		{"admin-from-monitoring", "networkPolicy.enabled=true,networkPolicy.adminFrom[0].namespaceSelector.matchLabels.name=monitoring",
			[]rule{{[]string{"http", "grpc"}, 0}, {[]string{"admin"}, 1}}},
		{"callers-and-no-grpc", "networkPolicy.enabled=true,ports.grpc=0,networkPolicy.from[0].podSelector.matchLabels.role=gateway",
			[]rule{{[]string{"http"}, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := renderChart(t, tc.set)
			np := k.networkPolicy
			if (np != nil) != (tc.want != nil) {
				t.Fatalf("NetworkPolicy rendered = %v, want %v", np != nil, tc.want != nil)
			}
			if np == nil {
				return
			}
			if got, want := np.Spec.PodSelector.MatchLabels, k.deployment.Spec.Selector.MatchLabels; !maps.Equal(got, want) {
				t.Errorf("podSelector = %v, want the Deployment's %v", got, want)
			}
			var got []rule
			for _, in := range np.Spec.Ingress {
				var r rule
				for _, p := range in.Ports {
					r.ports = append(r.ports, p.Port.String())
				}
				r.from = len(in.From)
				got = append(got, r)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("ingress rules = %v, want %v", got, tc.want)
			}
		})
	}
}
