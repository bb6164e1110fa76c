package deploy

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDeployDocKubernetes checks the numbers docs/DEPLOY.md gives about
// deploy/kubernetes/ against the manifests: the port Prometheus is pointed
// at, the replica count, the resources, the autoscaler's range and target,
// and the mount of the TLS Secret. A manifest changed without its page (the
// scrape moving to admin_listen's port, say) fails here.
func TestDeployDocKubernetes(t *testing.T) {
	raw, err := os.ReadFile(repoRoot + "/docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(raw)), " ") // sentences wrap anywhere
	k := loadKubernetes(t)
	pod := k.deployment.Spec.Template
	c := pod.Spec.Containers[0]
	var tlsMount string
	for _, m := range c.VolumeMounts {
		if m.Name == "tls" {
			tlsMount = m.MountPath
		}
	}
	for _, tc := range []struct {
		name, claim string
	}{
		{"scrape-port", fmt.Sprintf("`prometheus.io/scrape|port|path` annotations point the usual Prometheus Kubernetes scrape config at `%s` on port %s",
			pod.Annotations["prometheus.io/path"], pod.Annotations["prometheus.io/port"])},
		{"replicas", fmt.Sprintf("%d replicas, readiness on `%s` and liveness on `%s` (port `%s`)",
			*k.deployment.Spec.Replicas, c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Port.String())},
		{"tls-mount", fmt.Sprintf("the TLS Secret mounted at `%s`", tlsMount)},
		{"resources", fmt.Sprintf("requests of %s CPU and %s memory and a %s memory limit",
			c.Resources.Requests.Cpu(), c.Resources.Requests.Memory(), c.Resources.Limits.Memory())},
		{"hpa", fmt.Sprintf("%d–%d replicas at %d%% CPU",
			*k.hpa.Spec.MinReplicas, k.hpa.Spec.MaxReplicas, *k.hpa.Spec.Metrics[0].Resource.Target.AverageUtilization)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(doc, tc.claim) {
				t.Errorf("docs/DEPLOY.md does not say what deploy/kubernetes/ holds: want %q", tc.claim)
			}
		})
	}
	// Every port DEPLOY.md's Kubernetes section names for the Service is one.
	sec := regexp.MustCompile("\\[`service.yaml`\\][^\\n]*\\n(?:  [^\\n]*\\n)*").Find(raw)
	for _, p := range k.service.Spec.Ports {
		if want := fmt.Sprintf("`%s` %d", p.Name, p.Port); !strings.Contains(strings.Join(strings.Fields(string(sec)), " "), want) {
			t.Errorf("docs/DEPLOY.md's service.yaml item does not name the port %s", want)
		}
	}
}

// TestDeployDocServiceAccountRecipe decodes the Kubernetes objects of
// docs/DEPLOY.md's service-account recipe strictly into k8s.io/api types
// and checks that they fit together: the pod runs as the ServiceAccount the
// recipe creates, and the ClusterRoleBinding binds that one.
func TestDeployDocServiceAccountRecipe(t *testing.T) {
	raw, err := os.ReadFile(repoRoot + "/docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# in the Deployment's pod spec\n.*?)```").FindSubmatch(raw)
	if m == nil {
		t.Fatal("docs/DEPLOY.md has no service-account recipe (a yaml block starting # in the Deployment's pod spec)")
	}
	var objs k8sObjects
	decodeManifests(t, "docs/DEPLOY.md", m[1], &objs, map[string]string{})
	sa, crb := objs.serviceAccount, objs.clusterRoleBinding
	if sa == nil || crb == nil {
		t.Fatalf("the recipe has ServiceAccount %v, ClusterRoleBinding %v; want both", sa != nil, crb != nil)
	}
	pod := regexp.MustCompile(`(?m)^serviceAccountName: (\S+)`).FindSubmatch(m[1])
	if pod == nil || string(pod[1]) != sa.Name {
		t.Errorf("the recipe's pod spec runs as %q, want the ServiceAccount it creates (%s)", pod, sa.Name)
	}
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != sa.Name || crb.Subjects[0].Namespace != sa.Namespace {
		t.Errorf("ClusterRoleBinding subjects %+v, want the ServiceAccount %s/%s", crb.Subjects, sa.Namespace, sa.Name)
	}
	if crb.RoleRef.Name != "system:service-account-issuer-discovery" {
		t.Errorf("ClusterRoleBinding role %q, want system:service-account-issuer-discovery", crb.RoleRef.Name)
	}
}
