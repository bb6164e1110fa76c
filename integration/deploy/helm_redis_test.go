package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/jwksverify/jwksverify/internal/redistest"
)

// chartRedis is the rendered config's redis section, decoded strictly: a
// key the test does not know fails it.
type chartRedis struct {
	URL      string `yaml:"url"`
	Sentinel *struct {
		Master       string   `yaml:"master"`
		Addrs        []string `yaml:"addrs"`
		PasswordFile string   `yaml:"password_file"`
	} `yaml:"sentinel"`
	Cluster *struct {
		Addrs []string `yaml:"addrs"`
	} `yaml:"cluster"`
	Username     string            `yaml:"username"`
	PasswordFile string            `yaml:"password_file"`
	TLS          map[string]string `yaml:"tls"`
	Timeout      string            `yaml:"timeout"`
	AckReplicas  int               `yaml:"acknowledge_replicas"`
}

// TestHelmRedis renders the chart with the redis values of each mode and
// checks that the pieces agree: the config's redis section says what the
// values say, every file it names (the passwords, the TLS files, the
// shared introspection cache's key) is a file of a Secret volume the
// container mounts read-only, and the rendered config passes `jwksverify
// check` once those files exist.
func TestHelmRedis(t *testing.T) {
	sharedIssuer := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(sharedIssuer, []byte(`config:
  issuers:
    - issuer: https://idp.example.com/
      discovery: true
      introspection: {url: "https://idp.example.com/introspect", cache: {shared: true}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		set        string
		values     string // a values file, or ""
		wantMode   string
		wantFiles  int // files of Secrets the redis section and the issuers name
		wantAck    int
		wantSecret []string // the Secrets mounted
	}{
		{name: "off-by-default"},
		{name: "url-with-password", set: "redis.mode=url,redis.url=redis://redis:6379/0,redis.username=jv,redis.passwordSecret.name=redis-auth",
			wantMode: "url", wantFiles: 1, wantSecret: []string{"redis-auth"}},
		{name: "sentinel-tls-ack", set: "redis.mode=sentinel,redis.sentinel.addrs={s-0:26379,s-1:26379,s-2:26379},redis.sentinel.passwordSecret.name=sentinel-auth," +
			"redis.passwordSecret.name=redis-auth,redis.tls.secretName=redis-tls,redis.tls.clientCert=true,redis.acknowledgeReplicas=1",
			wantMode: "sentinel", wantFiles: 5, wantAck: 1, wantSecret: []string{"redis-auth", "redis-tls", "sentinel-auth"}},
		{name: "cluster-shared-introspection", set: "redis.mode=cluster,redis.cluster.addrs={c-0:6379,c-1:6379},redis.cacheKeySecret.name=cache-key",
			values: sharedIssuer, wantMode: "cluster", wantFiles: 1, wantSecret: []string{"cache-key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var more []string
			if tc.values != "" {
				more = []string{"-f", tc.values}
			}
			k, seen := renderChart(t, tc.set, more...)
			if k.deployment == nil || k.configMap == nil {
				t.Fatalf("rendered kinds = %v, want a Deployment and a ConfigMap", seen)
			}
			conf := k.configMap.Data["config.yaml"]
			var doc struct {
				Redis   yaml.Node        `yaml:"redis"`
				Issuers []map[string]any `yaml:"issuers"`
			}
			if err := yaml.Unmarshal([]byte(conf), &doc); err != nil {
				t.Fatalf("config.yaml: %v", err)
			}
			if tc.wantMode == "" {
				if !doc.Redis.IsZero() {
					t.Errorf("redis section %v, want none", doc.Redis)
				}
				return
			}
			raw, _ := yaml.Marshal(&doc.Redis)
			var r chartRedis
			dec := yaml.NewDecoder(strings.NewReader(string(raw)))
			dec.KnownFields(true)
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("redis section %s: %v", raw, err)
			}
			switch tc.wantMode {
			case "url":
				if r.URL != "redis://redis:6379/0" || r.Username != "jv" || r.Sentinel != nil || r.Cluster != nil {
					t.Errorf("redis = %+v, want the url and the user", r)
				}
			case "sentinel":
				if r.Sentinel == nil || r.Sentinel.Master != "mymaster" || !slices.Equal(r.Sentinel.Addrs, []string{"s-0:26379", "s-1:26379", "s-2:26379"}) || r.URL != "" {
					t.Errorf("redis = %+v, want the sentinels", r)
				}
			case "cluster":
				if r.Cluster == nil || !slices.Equal(r.Cluster.Addrs, []string{"c-0:6379", "c-1:6379"}) || r.URL != "" {
					t.Errorf("redis = %+v, want the cluster's nodes", r)
				}
			}
			if r.AckReplicas != tc.wantAck || r.Timeout != "200ms" {
				t.Errorf("acknowledge_replicas %d, timeout %q; want %d, 200ms", r.AckReplicas, r.Timeout, tc.wantAck)
			}

			// Every file named is a mounted Secret's file.
			files := []string{r.PasswordFile, r.TLS["ca_file"], r.TLS["cert_file"], r.TLS["key_file"]}
			if r.Sentinel != nil {
				files = append(files, r.Sentinel.PasswordFile)
			}
			for _, is := range doc.Issuers {
				if in, ok := is["introspection"].(map[string]any); ok {
					if c, ok := in["cache"].(map[string]any); ok {
						kf, _ := c["key_file"].(string)
						files = append(files, kf)
					}
				}
			}
			files = slices.DeleteFunc(files, func(f string) bool { return f == "" })
			if len(files) != tc.wantFiles {
				t.Errorf("files named %q, want %d", files, tc.wantFiles)
			}
			pod := k.deployment.Spec.Template.Spec
			var secrets []string
			for _, f := range files {
				if v, m := secretOf(pod, f); v == nil || !m.ReadOnly {
					t.Errorf("%s is in no read-only Secret volume mount", f)
				} else if !slices.Contains(secrets, v.Secret.SecretName) {
					secrets = append(secrets, v.Secret.SecretName)
				}
			}
			slices.Sort(secrets)
			if !slices.Equal(secrets, tc.wantSecret) {
				t.Errorf("Secrets of the named files = %q, want %q", secrets, tc.wantSecret)
			}

			// jwksverify loads the rendered config with the files there.
			dir := t.TempDir()
			tf := redistest.NewTLSFiles(t)
			pem := map[string]string{"ca.crt": tf.CA, "tls.crt": tf.ClientCert, "tls.key": tf.ClientKey}
			for _, f := range files {
				local := filepath.Join(dir, strings.TrimPrefix(f, "/"))
				if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
					t.Fatal(err)
				}
				content := []byte(strings.Repeat("k", 32))
				if src, ok := pem[filepath.Base(f)]; ok {
					var err error
					if content, err = os.ReadFile(src); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(local, content, 0o600); err != nil {
					t.Fatal(err)
				}
				conf = strings.ReplaceAll(conf, f, local)
			}
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

// secretOf returns the Secret volume, and its mount, that holds the file
// at path: the mount's path plus one of the Secret's items (or any key,
// without items).
func secretOf(pod corev1.PodSpec, path string) (*corev1.Volume, *corev1.VolumeMount) {
	c := pod.Containers[0]
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		rel, ok := strings.CutPrefix(path, m.MountPath+"/")
		if !ok {
			continue
		}
		for j := range pod.Volumes {
			v := &pod.Volumes[j]
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 || slices.ContainsFunc(v.Secret.Items, func(it corev1.KeyToPath) bool { return it.Path == rel }) {
				return v, m
			}
		}
	}
	return nil, nil
}

// TestHelmRedisRefuses: values that cannot make a working redis section
// fail the render, naming the value.
func TestHelmRedisRefuses(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"redis.mode=memcached", `redis.mode "memcached" is not one of`},
		{"redis.mode=url", "redis.url is required"},
		{"redis.mode=url,redis.url=redis://:pw@redis:6379", "redis.url must hold no user or password"},
		{"redis.mode=sentinel", "redis.sentinel.addrs is required"},
		{"redis.mode=cluster", "redis.cluster.addrs is required"},
		{"config.redis.url=redis://x:1", "config.redis is set by the chart"},
	} {
		if out, err := helm(t, "template", "jv", chartDir, "--set", tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template --set %s = %v, want an error with %q\n%s", tc.set, err, tc.want, out)
		}
	}
	if out, err := helm(t, "lint", "--strict", chartDir, "--set", "redis.mode=sentinel,redis.sentinel.addrs={s:26379},redis.passwordSecret.name=p,redis.tls.secretName=t,redis.cacheKeySecret.name=k"); err != nil {
		t.Errorf("helm lint with Sentinel values: %v\n%s", err, out)
	}
}
