package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProxyConfigCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, proxy string) string {
		p := filepath.Join(dir, name)
		cfg := "listen: 127.0.0.1:8181\nissuers:\n  - {issuer: https://a.example.com/, jwks_url: https://a.example.com/jwks, claims_to_headers: {sub: X-Auth-Subject}}\n"
		if proxy != "" {
			cfg += "forward_auth: {proxy: " + proxy + "}\n"
		}
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unset, nginx := write("unset.yaml", ""), write("nginx.yaml", "nginx")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    string // in stdout
		wantStderr string // in stderr ("" = stderr empty)
	}{
		{"matching-preset", []string{"nginx", "--config", nginx}, exitOK, "proxy_set_header X-Auth-Subject \"\";", ""},
		{"unset-preset-warns", []string{"caddy", "--config", unset}, exitOK, "request_header -X-Auth-Subject", "add forward_auth: {proxy: caddy}"},
		{"mismatched-preset-refused", []string{"caddy", "--config", nginx}, exitUsage, "", "forward_auth.proxy: nginx, not caddy"},
		{"unknown-proxy", []string{"haproxy", "--config", nginx}, exitUsage, "", `unknown proxy "haproxy"; supported: nginx, traefik, caddy, envoy`},
		{"no-config", []string{"nginx"}, exitUsage, "", "jwksverify proxy-config: --config FILE (or JWKSVERIFY_CONFIG) is required\n\nUsage: jwksverify proxy-config"},
		{"no-proxy", []string{"--config", nginx}, exitUsage, "", "jwksverify proxy-config: name one proxy: nginx, traefik, caddy, envoy\n\nUsage: jwksverify proxy-config"},
		{"two-proxies", []string{"nginx", "caddy", "--config", nginx}, exitUsage, "", "jwksverify proxy-config: name one proxy: nginx"},
		{"nothing", nil, exitUsage, "", "jwksverify proxy-config: name one proxy"},
		{"flags", []string{"envoy", "--config", nginx + "x"}, exitUsage, "", "configuration error"},
		{"listen-upstream", []string{"traefik", "--config", unset, "--listen", "127.0.0.1:7000", "--upstream", "127.0.0.1:7001"}, exitOK, "url: http://127.0.0.1:7001", "warning"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			a := &app{stdout: &stdout, stderr: &stderr, lookupEnv: func(string) (string, bool) { return "", false }}
			code := a.run(t.Context(), append([]string{"proxy-config"}, tc.args...))
			if code != tc.wantCode {
				t.Fatalf("proxy-config %q = %d, want %d (stderr %q)", tc.args, code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantOut, stdout.String())
			}
			if tc.wantStderr == "" && stderr.Len() != 0 || !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr = %q, want %q", stderr.String(), tc.wantStderr)
			}
			if tc.wantCode != exitOK && stdout.Len() != 0 {
				t.Errorf("stdout = %q on failure, want empty", stdout.String())
			}
		})
	}
}
