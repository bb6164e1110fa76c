package main

import (
	"strings"
	"testing"
)

// TestCheckTLSFilesAsServe: a listener's TLS files that serve cannot load
// (a missing cert_file, key_file or client_ca_file) are refused by check
// too, exit 2 naming the section: check said "OK" and exit 0, serve then
// refused to start (exit 2).
func TestCheckTLSFilesAsServe(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	for _, tt := range []struct{ name, tls, want string }{
		{"http-cert-missing", "tls: {cert_file: nope.crt, key_file: nope.key}\n", "tls"},
		{"grpc-cert-missing", "grpc_listen: 127.0.0.1:0\ngrpc_tls: {cert_file: nope.crt, key_file: nope.key}\n", "grpc_tls"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeFile(t, dir, tt.name+".yaml", []byte("listen: 127.0.0.1:0\nissuers:\n  - issuer: https://idp.test/\n    jwks_file: jwks.json\n"+tt.tls))
			s := runApp(t, nil, "", "serve", "--config", cfg)
			c := runApp(t, nil, "", "check", "--config", cfg)
			if c.code != s.code || c.code != 2 || !strings.Contains(c.stderr, tt.want) {
				t.Errorf("serve: exit %d (%q); check: exit %d, stdout %q, stderr %q; want both 2, check naming %s", s.code, strings.TrimSpace(s.stderr), c.code, c.stdout, c.stderr, tt.want)
			}
		})
	}
}
