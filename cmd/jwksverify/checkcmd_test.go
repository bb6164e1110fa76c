package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestCheck: `jwksverify check` passes the example configuration and a
// working one, and catches what would keep serve from working — a typo'd
// key, a missing jwks_file, a jwks_file without a usable key, a missing or
// certificate-less ca_file, a state_dir
// that is a file, and online a trailing-slash issuer that discovery
// contradicts and a JWKS without a usable key — each with exit 2 and a line
// naming the problem.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	writeFile(t, dir, "enc.json", testkeys.JWKS(testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A), Kid: "enc", Alg: "RSA-OAEP", Use: "enc"}))
	writeFile(t, dir, "a-file", []byte("x"))
	good := idpServer(t, testJWKS())
	encOnly := idpServer(t, testkeys.JWKS(testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A), Kid: "enc", Alg: "RSA-OAEP", Use: "enc"}))
	config := func(name, body string) string { return writeFile(t, dir, name, []byte(body)) }
	secretEnv := map[string]string{"INTROSPECT_SECRET": "an-introspection-secret-of-32-bytes"}
	example := "../../testdata/config/example.yaml"

	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		want     int
		wantOut  string // in stdout
		wantErrs string // in stderr
	}{
		{name: "example", args: []string{"--config", example}, env: secretEnv, want: 0, wantOut: "OK (3 issuers"},
		{name: "example-skip-secrets", args: []string{"--config", example, "--skip-secrets"}, want: 0, wantOut: "OK"},
		{name: "example-unset-secret", args: []string{"--config", example}, want: 2, wantErrs: "INTROSPECT_SECRET is not set"},
		{name: "typo-key", args: []string{"--config", config("typo.yaml", "issuers:\n  - issuer: https://idp.test/\n    jwks_file: jwks.json\n    audience: [api]\n")},
			want: 2, wantErrs: "audience"},
		{name: "missing-jwks-file", args: []string{"--config", config("missing.yaml", "issuers:\n  - issuer: https://idp.test/\n    jwks_file: nope.json\n")},
			want: 2, wantErrs: filepath.Join(dir, "nope.json")},
		{name: "jwks-file-without-usable-key", args: []string{"--config", config("enc.yaml", "issuers:\n  - issuer: https://idp.test/\n    jwks_file: enc.json\n")},
			want: 2, wantErrs: "no usable"},
		{name: "state-dir-is-a-file", args: []string{"--config", config("state.yaml", "issuers:\n  - issuer: "+good.URL+"\n    discovery: true\nstate_dir: a-file/state\n")},
			want: 2, wantErrs: "not a directory"},
		{name: "missing-ca-file", args: []string{"--config", config("noca.yaml", "issuers:\n  - issuer: https://idp.test/\n    discovery: true\n    ca_file: nope.pem\n")},
			want: 2, wantErrs: "ca_file"},
		{name: "ca-file-without-certificate", args: []string{"--config", config("badca.yaml", "issuers:\n  - issuer: https://idp.test/\n    discovery: true\n    ca_file: a-file\n")},
			want: 2, wantErrs: "no PEM certificate"},
		{name: "skip-secrets-still-checks-client-ids", args: []string{"--skip-secrets", "--config", config("dupclient.yaml", "issuers:\n  - issuer: https://idp.test/\n    jwks_file: jwks.json\nintrospection: {clients: [{id: gw, secret_env: A}, {id: gw, secret_env: B}]}\n")},
			want: 2, wantErrs: `introspection.clients[1]: id "gw" is listed twice`},
		{name: "skip-secrets-still-needs-the-client-secret-file", args: []string{"--skip-secrets", "--config", config("nosecretfile.yaml", "issuers:\n  - issuer: https://idp.test/\n    jwks_url: https://idp.test/jwks\n    introspection: {url: https://idp.test/introspect, client_id: rs, client_secret_file: nope.secret}\n")},
			want: 2, wantErrs: "issuers[0].introspection.client_secret_file"},
		{name: "admin-tls-files-checked", args: []string{"--config", config("admintls.yaml", "admin_listen: 127.0.0.1:0\nadmin_tls: {cert_file: nope.crt, key_file: nope.key}\nissuers:\n  - issuer: https://idp.test/\n    jwks_file: jwks.json\n")},
			want: 2, wantErrs: "admin_tls: "},
		{name: "dpop-sender-constraint", args: []string{"--config", config("dpop.yaml", "issuers:\n  - issuer: https://idp.test/\n    jwks_file: jwks.json\n    sender_constraint: {dpop: optional}\n")}, want: 0, wantOut: "OK (1 issuer;"},
		{name: "local-ok", args: []string{"--config", config("local.yaml", "issuers:\n  - issuer: https://idp.test/\n    jwks_file: jwks.json\n")}, want: 0, wantOut: "2 usable"},
		{name: "online-ok", args: []string{"--online", "--config", config("online.yaml", "issuers:\n  - issuer: "+good.URL+"\n    discovery: true\n")}, want: 0, wantOut: "2 usable"},
		{name: "trailing-slash-offline-not-fetched", args: []string{"--config", config("slash.yaml", "issuers:\n  - issuer: "+good.URL+"/\n    discovery: true\n")}, want: 0, wantOut: "not fetched"},
		{name: "trailing-slash-online", args: []string{"--config", filepath.Join(dir, "slash.yaml"), "--online"}, want: 2, wantErrs: "configured \"" + good.URL + "/\""},
		{name: "online-no-usable-key", args: []string{"--online", "--config", config("enconline.yaml", "issuers:\n  - issuer: "+encOnly.URL+"\n    jwks_url: "+encOnly.URL+"/jwks\n")}, want: 2, wantErrs: "no usable"},
		{name: "online-unreachable", args: []string{"--online", "--config", config("down.yaml", "issuers:\n  - issuer: http://127.0.0.1:1\n    discovery: true\n")}, want: 2, wantErrs: "connection refused"},
		{name: "no-config", args: nil, want: 2, wantErrs: "--config"},
		{name: "unreadable-config", args: []string{"--config", filepath.Join(dir, "none.yaml")}, want: 2, wantErrs: "none.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runApp(t, tt.env, "", append([]string{"check"}, tt.args...)...)
			if r.code != tt.want {
				t.Fatalf("check %v: exit %d, want %d\nstdout: %s\nstderr: %s", tt.args, r.code, tt.want, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", r.stdout, tt.wantOut)
			}
			if !strings.Contains(r.stderr, tt.wantErrs) {
				t.Errorf("stderr = %q, want it to contain %q", r.stderr, tt.wantErrs)
			}
			if strings.Contains(r.stdout+r.stderr, secretEnv["INTROSPECT_SECRET"]) {
				t.Errorf("the output carries the introspection secret")
			}
		})
	}
	// serve refuses what check refuses: the same typo'd file.
	if r := runApp(t, nil, "", "serve", "--config", filepath.Join(dir, "typo.yaml")); r.code != 2 {
		t.Errorf("serve of the typo'd file: exit %d, want 2", r.code)
	}
	if _, err := os.Stat(filepath.Join(dir, "a-file", "state")); err == nil {
		t.Errorf("check created a state_dir")
	}
}
