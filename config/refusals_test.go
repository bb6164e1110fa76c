package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigRefusals: each refusal the plan makes itself (not a library's
// CheckOptions) refuses its input and names its key, and the value at each
// bound is accepted: `jwksverify check` reports exactly these. A case per
// check, so that deleting one check or moving its bound fails a case.
func TestConfigRefusals(t *testing.T) {
	dir := t.TempDir()
	for name, n := range map[string]int{"s31": 31, "s32": 32, "s63": 63, "s64": 64} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("k", n)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{"blank": " \n\t\n", "spaced": "push bearer", "del": "push\x7fbearer", "bearer": "push-bearer-0123456789\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := func(k string) (string, bool) {
		switch k {
		case "S_EMPTY":
			return "", true
		}
		return "", false
	}
	const iss = "issuers:\n  - issuer: https://idp.example.com/\n"
	const spiffe = "issuers:\n  - spiffe: {trust_domain: example.org, bundle_url: \"https://example.org/bundle\"}\n    audiences: [api]\n"
	const revoked = "state_dir: /var/lib/jwksverify\nrevocation: {retention: 1h}\n"
	tests := []struct {
		name, doc, wantErr string // wantErr "" = valid
	}{
		{"rejections-per-second-zero", disc + "log: {rejections_per_second: 0}\n", ""},
		{"rejections-per-second-negative", disc + "log: {rejections_per_second: -1}\n", "log.rejections_per_second: -1 is negative"},
		{"token-sources-empty", disc + "token_sources: []\n", "token_sources: empty list"},
		{"shutdown-timeout-lowest", disc + "shutdown_timeout: 1s\n", ""},
		{"shutdown-timeout-below", disc + "shutdown_timeout: 999999999ns\n", "shutdown_timeout: 999.999999ms is out of range"},
		{"shutdown-timeout-highest", disc + "shutdown_timeout: 10m\n", ""},
		{"shutdown-timeout-above", disc + "shutdown_timeout: 10m0.000000001s\n", "shutdown_timeout: 10m0.000000001s is out of range"},
		{"shutdown-delay-highest", disc + "shutdown_delay: 1m\n", ""},
		{"shutdown-delay-above", disc + "shutdown_delay: 61s\n", "shutdown_delay: 1m1s is out of range"},
		{"log-format-unknown", disc + "log: {format: xml}\n", `log.format: "xml" is not one of json, text`},
		{"grpc-listen-same-as-listen", disc + "listen: 127.0.0.1:8080\ngrpc_listen: 127.0.0.1:8080\n", `grpc_listen: "127.0.0.1:8080" is also the HTTP listen address`},
		{"admin-listen-same-as-grpc", disc + "grpc_listen: 127.0.0.1:9000\nadmin_listen: 127.0.0.1:9000\n", `admin_listen: "127.0.0.1:9000" is also the HTTP or gRPC listen address`},
		{"listen-highest-port", disc + "listen: 127.0.0.1:65535\n", ""},
		{"listen-port-above", disc + "listen: 127.0.0.1:65536\n", `listen: "127.0.0.1:65536": port "65536" is not a number`},
		{"listen-port-leading-zero", disc + "listen: 127.0.0.1:08080\n", `listen: "127.0.0.1:08080": port "08080" is not a number in [0, 65535]`},
		{"listen-port-plus", disc + "listen: 127.0.0.1:+80\n", `listen: "127.0.0.1:+80": port "+80" is not a number in [0, 65535]`},
		{"admin-listen-port-leading-zero", disc + "listen: 127.0.0.1:8080\nadmin_listen: 127.0.0.1:08080\n", `admin_listen: "127.0.0.1:08080": port "08080" is not a number in [0, 65535]`},
		{"grpc-listen-port-zero-twice", disc + "grpc_listen: 127.0.0.1:00\n", `grpc_listen: "127.0.0.1:00": port "00" is not a number in [0, 65535]`},
		{"listen-host-slash", disc + "listen: a/b:80\n", `listen: "a/b:80": bad host "a/b"`},
		{"retention-highest", disc + "state_dir: /s\nrevocation: {retention: 9600h}\n", ""},
		{"retention-above", disc + "state_dir: /s\nrevocation: {retention: 9600h0m0.000000001s}\n", "revocation.retention: 9600h0m0.000000001s is out of range"},
		{"max-lifetime-at-retention", iss + "    discovery: true\n    max_lifetime: 1h\n" + revoked, ""},
		{"max-lifetime-above-retention", iss + "    discovery: true\n    max_lifetime: 1h0m0.000000001s\n" + revoked, "issuers[0].max_lifetime: 1h0m0.000000001s is above revocation.retention 1h0m0s"},
		{"client-secret-env-empty", disc + "introspection: {clients: [{id: gw, secret_env: S_EMPTY}]}\n", "introspection.clients[0].secret_env: environment variable S_EMPTY is not set"},
		{"dpop-algorithms-empty", disc + "dpop: {algorithms: []}\n", "dpop.algorithms: empty list"},
		{"dpop-pool-size-with-memory", disc + "dpop: {redis_pool_size: 4}\n", "dpop.redis_pool_size: set, and dpop.replay_store is memory"},
		{"spiffe", spiffe, ""},
		{"spiffe-two-bundles", strings.Replace(spiffe, "}", ", bundle_file: b.json}", 1), "issuers[0].spiffe: exactly one of bundle_url and bundle_file"},
		{"spiffe-no-bundle", strings.Replace(spiffe, `, bundle_url: "https://example.org/bundle"`, "", 1), "issuers[0].spiffe: exactly one of bundle_url and bundle_file"},
		{"spiffe-with-introspection", spiffe + "    introspection: {url: \"https://example.org/introspect\"}\n", "issuers[0].spiffe: the bundle is the key source"},
		{"spiffe-without-audiences", strings.Replace(spiffe, "    audiences: [api]\n", "", 1), "issuers[0].audiences: required for a SPIFFE trust domain"},
		{"issuer-leading-space", "issuers:\n  - issuer: \" https://idp.example.com/\"\n    discovery: true\n", "issuers[0].issuer: \" https://idp.example.com/\" has leading or trailing spaces"},
		{"discovery-and-jwks-file", iss + "    discovery: true\n    jwks_file: k.json\n", "issuers[0]: exactly one of discovery, jwks_url, jwks_file, secret_file is required"},
		{"discovery-of-a-template", "issuers:\n  - issuer: \"https://login.example.com/{tenantid}/v2.0\"\n    discovery: true\n", "issuers[0].discovery: the issuer \"https://login.example.com/{tenantid}/v2.0\" is a template"},
		{"secret-kid-without-secret", disc + "    secret_kid: k1\n", "issuers[0].secret_kid: set without secret_file"},
		{"algorithms-empty", disc + "    algorithms: []\n", "issuers[0].algorithms: empty list"},
		{"secret-32-bytes", iss + "    secret_file: s32\n", ""},
		{"secret-31-bytes", iss + "    secret_file: s31\n", "holds 31 bytes; an HMAC secret must be at least 32 bytes"},
		{"secret-64-bytes-hs512", iss + "    secret_file: s64\n    algorithms: [HS512]\n", ""},
		{"secret-63-bytes-hs512", iss + "    secret_file: s63\n    algorithms: [HS512]\n", "issuers[0].algorithms[0]: HS512 needs a secret of at least 64 bytes (RFC 7518 §3.2); the secret holds 63"},
		{"secret-32-bytes-hs384", iss + "    secret_file: s32\n    algorithms: [HS384]\n", "issuers[0].algorithms[0]: HS384 needs a secret of at least 48 bytes"},
		{"id-token-client-id-spaced", disc + "    id_token: {client_ids: [\" app\"]}\n", "issuers[0].id_token.client_ids[0]: \" app\" is empty or has leading or trailing spaces"},
		{"leeway-zero", disc + "    leeway: 0s\n", ""},
		{"leeway-negative", disc + "    leeway: -1ns\n", "issuers[0].leeway: -1ns is negative"},
		{"bearer-token-file", disc + "    ssf: {audiences: [a], push: {bearer_token_file: bearer}}\n", "configure the revocation section"},
		{"bearer-token-file-blank", disc + "    ssf: {audiences: [a], push: {bearer_token_file: blank}}\n", "issuers[0].ssf.push.bearer_token_file: " + filepath.Join(dir, "blank") + " is empty"},
		{"bearer-token-file-space", disc + "    ssf: {audiences: [a], push: {bearer_token_file: spaced}}\n", "holds a byte a bearer token cannot"},
		{"bearer-token-file-del", disc + "    ssf: {audiences: [a], push: {bearer_token_file: del}}\n", "holds a byte a bearer token cannot"},
		{"mint-ttl-zero", disc + "mint: {issuer: i, keys_file: k.jwks, signing_kid: k2, ttl: 0s}\n", "mint.ttl: 0; remove the key"},
		{"quoted-boolean", disc + "forward_auth: {strip_authorization: \"true\"}\n", "forward_auth.strip_authorization: line 4: want a boolean"},
		{"matcher-hex-number", disc + "policies:\n  - {name: a, claims: [{claim: n, equals: 0x10}]}\ndefault_policy: a\n", "0x10 is not a JSON number"},
		{"introspection-without-url", iss + "    jwks_url: \"https://idp.example.com/jwks\"\n    introspection: {client_id: a}\n", "issuers[0].introspection.url: empty and discovery is off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), dir, Overrides{}, env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
