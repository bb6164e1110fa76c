package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestKubernetesConfigMapRuns runs the real binary with the config.yaml of
// deploy/kubernetes/configmap.yaml, so the Kubernetes config is proved to
// load with the binary's own (strict) loader and to do what the manifests
// promise. Only these are changed, each found exactly once:
//
//	"https://idp.example.com/"          -> a test IdP on loopback (discovery + JWKS)
//	"state_dir: /var/lib/jwksverify"    -> a temp dir (not the host's /var/lib)
//	"/etc/jwksverify-tls/"              -> a temp dir with a test CA's pair (the Secret)
//	"admin_listen: 0.0.0.0:9090"        -> "admin_listen: 127.0.0.1:0"
//
// and the listeners are overridden with --listen/--grpc-listen 127.0.0.1:0,
// as a flag would in any deployment.
func TestKubernetesConfigMapRuns(t *testing.T) {
	data, err := os.ReadFile("../deploy/kubernetes/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := sigsyaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatalf("configmap.yaml: %v", err)
	}
	p := startDiscoveryIdP(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	tlsSetup := newTLSSetup(t)
	cfg := substituteText(t, "configmap.yaml config.yaml", cm.Data["config.yaml"], []substitution{
		{"https://idp.example.com/", p.Issuer},
		{"state_dir: /var/lib/jwksverify", "state_dir: " + stateDir},
		{"admin_listen: 0.0.0.0:9090", "admin_listen: 127.0.0.1:0"},
	})
	// The Secret's mount, twice (tls and grpc_tls), each file name once per section.
	cfg = strings.ReplaceAll(cfg, "/etc/jwksverify-tls/tls.crt", tlsSetup.cert)
	cfg = strings.ReplaceAll(cfg, "/etc/jwksverify-tls/tls.key", tlsSetup.key)
	if strings.Contains(cfg, "/etc/jwksverify-tls") {
		t.Fatal("configmap.yaml names another file of the TLS Secret")
	}
	jv := startJWKSVerifyWith(t, cfg, jwksverifyOptions{Args: []string{"--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0"}})
	if jv.Admin == "" {
		t.Error("the ConfigMap's admin_listen did not open the admin listener")
	}
	if jv.GRPC == "" {
		t.Error("the ConfigMap's grpc_listen did not turn gRPC on")
	}
	if d, j := p.Fetches(); d < 1 || j < 1 {
		t.Errorf("IdP fetches: discovery %d, jwks %d; want both (discovery: true)", d, j)
	}

	c := tlsSetup.client(nil, false)
	for _, tc := range []struct {
		name        string
		token       string
		wantStatus  int
		wantSubject string
	}{
		{"valid", p.Token(nil), http.StatusOK, "alice"},
		{"wrong-audience", p.Token(map[string]any{"aud": "api://elsewhere"}), http.StatusUnauthorized, ""},
		{"forged", p.ForgedToken(), http.StatusUnauthorized, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, "https://"+jv.HTTP+"/v1/authz", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tc.token)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("GET /v1/authz = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if got := resp.Header.Get("X-Auth-Subject"); got != tc.wantSubject {
				t.Errorf("X-Auth-Subject = %q, want %q (claims_to_headers)", got, tc.wantSubject)
			}
		})
	}

	t.Run("metrics-served-for-the-scrape-annotations", func(t *testing.T) {
		resp, err := httpClient().Get("http://" + jv.Admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /metrics = %d, want 200", resp.StatusCode)
		}
	})
}
