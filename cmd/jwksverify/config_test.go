package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestBadConfig runs `serve --config` on broken files: each must exit 2
// with a message naming the offending field.
func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	short := writeFile(t, dir, "short.secret", []byte("only-twenty-bytes!!!"))
	good := writeFile(t, dir, "good.secret", []byte(strings.Repeat("s", 32)))
	const disc = "issuers:\n  - issuer: https://idp.example.com/\n    discovery: true\n"
	tests := []struct {
		name      string
		yaml      string
		wantField string
	}{
		{name: "unknown-top-level-key", yaml: "listn: 127.0.0.1:1\n" + disc, wantField: `listn: line 1: unknown key "listn"`},
		{name: "unknown-nested-key", yaml: disc + "    refresh: {min_intervall: 5s}\n", wantField: `issuers[0].refresh.min_intervall: line 4: unknown key`},
		{name: "unknown-key-did-you-mean", yaml: disc + "    audience: [api]\n", wantField: `issuers[0].audience: line 4: unknown key "audience" (did you mean "audiences"?)`},
		{name: "mis-indented-key", yaml: disc + "    jwks_file: x.json\n   audiences: [api]\n", wantField: `line 5: did not find expected '-' indicator: key "audiences" is indented unlike the keys before it; align it with the keys of its mapping`},
		{name: "negative-log-rate", yaml: disc + "log: {rejections_per_second: -1}\n", wantField: "log.rejections_per_second: -1 is negative; 0 means no limit"},
		{name: "no-issuers", yaml: "listen: 127.0.0.1:0\n", wantField: "issuers: at least one"},
		{name: "no-key-source", yaml: "issuers: [{issuer: a}]", wantField: "issuers[0]: exactly one of discovery, jwks_url, jwks_file, secret_file"},
		{name: "two-key-sources", yaml: disc + "    jwks_url: https://idp.example.com/keys\n", wantField: "issuers[0]: exactly one of discovery, jwks_url, jwks_file, secret_file is required (secret_file may also go with jwks_file); got discovery and jwks_url"},
		{name: "empty-issuer", yaml: "issuers: [{issuer: '', jwks_file: x.json}]", wantField: "issuers[0].issuer: empty"},
		{name: "duplicate-issuer", yaml: "issuers: [{issuer: a, jwks_file: x.json}, {issuer: a, jwks_file: y.json}]", wantField: `verify: issuer "a" configured twice`},
		{name: "empty-audience", yaml: disc + "  - issuer: b\n    jwks_file: x.json\n    audiences: [api, '']\n", wantField: "issuers[1].audiences: entry 1 is empty"},
		{name: "cross-check-rate-above-1", yaml: disc + "crypto: {cross_check_rate: 1.01}\n", wantField: "crypto.cross_check_rate: 1.01 is above 1"},
		{name: "alg-none", yaml: disc + "    algorithms: [RS256, none]\n", wantField: `issuers[0].algorithms[1]: "none" is never accepted`},
		{name: "alg-unknown", yaml: disc + "    algorithms: [RS1024]\n", wantField: `issuers[0].algorithms[0]: unknown algorithm "RS1024"`},
		{name: "hmac-from-remote", yaml: disc + "    algorithms: [HS256]\n", wantField: "issuers[0].algorithms[0]: HS256 needs a local key"},
		{name: "hmac-key-too-short-for-alg", yaml: "issuers: [{issuer: a, secret_file: " + good + ", algorithms: [HS512]}]", wantField: "issuers[0].algorithms[0]: HS512 needs a secret of at least 64 bytes"},
		{name: "secret-too-short", yaml: "issuers: [{issuer: a, secret_file: " + short + "}]", wantField: "issuers[0].secret_file: " + short + " holds 20 bytes; an HMAC secret must be at least 32 bytes"},
		{name: "secret-missing", yaml: "issuers: [{issuer: a, secret_file: " + dir + "/nope}]", wantField: "issuers[0].secret_file: open"},
		{name: "interval-below-1s", yaml: disc + "    refresh: {unknown_kid_interval: 500ms}\n", wantField: "issuers[0].refresh.unknown_kid_interval: 500ms is below the minimum of 1s"},
		{name: "min-above-max", yaml: disc + "    refresh: {min_interval: 2h, max_interval: 1h}\n", wantField: "issuers[0].refresh.min_interval: 2h0m0s exceeds MaxInterval 1h0m0s"},
		{name: "unknown-kid-wait-above-fetch-timeout", yaml: disc + "    refresh: {unknown_kid_wait: 3s, fetch_timeout: 2s}\n", wantField: "issuers[0].refresh.unknown_kid_wait: 3s exceeds FetchTimeout 2s"},
		{name: "unknown-kid-wait-negative", yaml: disc + "    refresh: {unknown_kid_wait: -1s}\n", wantField: "issuers[0].refresh.unknown_kid_wait: -1s is negative"},
		{name: "not-a-duration", yaml: disc + "    leeway: 30\n", wantField: `issuers[0].leeway: line 4: want a duration such as 30s, got "30"`},
		{name: "shutdown-delay-too-long", yaml: "shutdown_delay: 61s\n" + disc, wantField: "shutdown_delay: 1m1s is out of range [0s, 1m0s]"},
		{name: "shutdown-delay-negative", yaml: "shutdown_delay: -1s\n" + disc, wantField: "shutdown_delay: -1s is out of range [0s, 1m0s]"},
		{name: "leeway-too-large", yaml: disc + "    leeway: 1h\n", wantField: "issuers[0].leeway: 1h0m0s is above the maximum of 10m0s"},
		{name: "wrong-type", yaml: disc + "token_cache: {max_entries: lots}\n", wantField: `token_cache.max_entries: line 4: want a whole number, got "lots"`},
		{name: "list-expected", yaml: disc + "    audiences: api\n", wantField: "issuers[0].audiences: line 4: want a list"},
		{name: "listen-not-host-port", yaml: "listen: localhost\n" + disc, wantField: `listen: "localhost" is not host:port`},
		{name: "grpc-listen-bad-port", yaml: "grpc_listen: 127.0.0.1:http\n" + disc, wantField: `grpc_listen: "127.0.0.1:http": port "http" is not a number`},
		{name: "grpc-listen-same-as-listen", yaml: "listen: 127.0.0.1:9000\ngrpc_listen: 127.0.0.1:9000\n" + disc, wantField: `grpc_listen: "127.0.0.1:9000" is also the HTTP listen address`},
		{name: "plain-http-remote", yaml: "issuers: [{issuer: a, jwks_url: 'http://idp.example.com/keys'}]", wantField: "issuers[0].jwks_url: jwks: insecure URL: http://idp.example.com/keys: plain http is accepted only for loopback hosts"},
		{name: "discovery-url-without-discovery", yaml: "issuers: [{issuer: a, jwks_url: 'https://idp.example.com/keys', discovery_url: 'https://idp.example.com/d'}]", wantField: "issuers[0].discovery_url: set without Discovery"},
		{name: "plain-http-discovery", yaml: "issuers: [{issuer: 'http://idp.example.com/', discovery: true}]", wantField: "issuers[0].issuer: jwks: insecure URL: http://idp.example.com/: plain http is accepted only for loopback hosts"},
		{name: "credentials-in-url", yaml: "issuers: [{issuer: a, jwks_url: 'https://u:pw@idp.example.com/keys'}]", wantField: "issuers[0].jwks_url: jwks: insecure URL: https://idp.example.com/keys: credentials in the URL are refused"},
		{name: "claim-header-authorization", yaml: disc + "    claims_to_headers: {sub: Authorization}\n", wantField: `issuers[0].claims_to_headers.sub: "Authorization" is a header`},
		{name: "claim-header-forwarded-for", yaml: disc + "    claims_to_headers: {email: X-Forwarded-For}\n", wantField: `issuers[0].claims_to_headers.email: "X-Forwarded-For" is a header`},
		{name: "claim-headers-collide", yaml: disc + "    claims_to_headers: {sub: X-Who, email: x-who}\n", wantField: `map to the same header "X-Who"`},
		{name: "alias", yaml: "listen: &a 127.0.0.1:0\ngrpc_listen: *a\n" + disc, wantField: "grpc_listen: line 2: YAML aliases are not supported"},
		{name: "introspection-max-concurrent-zero", yaml: disc + "    introspection: {max_concurrent: 0}\n", wantField: `issuers[0].introspection.max_concurrent: line 4: want a whole number of at least 1, got "0"`},
		{name: "introspection-max-concurrent-too-large", yaml: disc + "    introspection: {max_concurrent: 10001}\n", wantField: "issuers[0].introspection.max_concurrent: 10001 is out of range [1, 10000]"},
		{name: "introspection-max-wait-too-long", yaml: disc + "    introspection: {max_wait: 10s}\n", wantField: "issuers[0].introspection.max_wait: 10s is out of range [1ms, 5s]"},
		{name: "introspection-secret-unset", yaml: disc + "introspection: {clients: [{id: gw, secret_env: JWKSVERIFY_TEST_UNSET_SECRET}]}\n", wantField: "introspection.clients[0].secret_env: environment variable JWKSVERIFY_TEST_UNSET_SECRET is not set"},
		{name: "log-level", yaml: disc + "log: {level: loud}\n", wantField: `log.level: "loud" is not one of debug, info, warn, error`},
		{name: "token-source-two-places", yaml: disc + "token_sources: [{header: X-Token, cookie: tok}]\n", wantField: "token_sources[0]: exactly one of header, cookie, query"},
		{name: "token-source-bad-header", yaml: disc + "token_sources: [{header: 'X Token'}]\n", wantField: `token_sources[0]: header: "X Token" is not a valid HTTP header name`},
		{name: "claim-header-reserved", yaml: disc + "    claims_to_headers: {sub: Content-Length}\n", wantField: "issuers[0].claims_to_headers.sub: \"Content-Length\" is a header"},
		{name: "limits-out-of-range", yaml: disc + "limits: {max_keys: 0}\n", wantField: `limits.max_keys: line 4: want a whole number of at least 1, got "0"`},
		{name: "limits-above-range", yaml: disc + "limits: {max_keys: 10001}\n", wantField: "limits.max_keys: 10001 is out of range [1, 10000]"},
		{name: "state-dir-is-a-file", yaml: disc + "state_dir: " + good + "\n", wantField: "issuers[0] (https://idp.example.com/): jwks: invalid options: state_dir: mkdir " + good + ": not a directory"},
		{name: "route-unknown-policy", yaml: disc + "forward_auth: {proxy: nginx}\npolicies: [{name: read}]\nroutes: [{path: /orders/**, policy: write}]\n", wantField: `routes[0].policy: "write" is not a configured policy`},
		{name: "cel-does-not-compile", yaml: disc + "policies: [{name: p, expression: 'claims.tid =='}]\n", wantField: "policies[0] (p).expression: does not compile"},
		{name: "cel-not-bool", yaml: disc + "policies: [{name: p, expression: 'request.method'}]\n", wantField: "policies[0] (p).expression: is of type string, want bool"},
		{name: "routes-without-proxy", yaml: disc + "policies: [{name: p}]\nroutes: [{path: /x, policy: p}]\n", wantField: "routes: routes choose a policy by the original request: set forward_auth.proxy"},
		{name: "policy-bad-name", yaml: disc + "policies: [{name: Orders}]\n", wantField: `policies[0].name: "Orders" is not`},
		{name: "policy-unknown-issuer", yaml: disc + "policies: [{name: p, issuers: [https://other.example/]}]\n", wantField: `policies[0] (p).issuers[0]: "https://other.example/" is not a configured issuer`},
		{name: "policy-claim-header-reserved", yaml: disc + "policies: [{name: p, claims_to_headers: {sub: Authorization}}]\n", wantField: `policies[0] (p).claims_to_headers: claim "sub": "Authorization" is a header`},
		{name: "default-policy-unknown", yaml: disc + "default_policy: nope\n", wantField: `default_policy: "nope" is not a configured policy`},
		{name: "two-documents", yaml: disc + "---\nlisten: 127.0.0.1:0\n", wantField: "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, tt.name+".yaml", []byte(tt.yaml))
			r := runBin(t, nil, "", "serve", "--config", path)
			if r.code != 2 {
				t.Fatalf("serve exit %d, want 2\nstderr: %s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.wantField) {
				t.Errorf("stderr = %q\nwant it to contain %q", r.stderr, tt.wantField)
			}
		})
	}
}

// TestOverridesBinary checks the precedence on the real binary: a bad
// environment value is named as such, and a flag beats it.
func TestOverridesBinary(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte("listen: 127.0.0.1:0\nissuers: [{issuer: a, jwks_file: jwks.json}]\n"))

	r := runBin(t, []string{"JWKSVERIFY_LISTEN=nowhere"}, "", "serve", "--config", cfg)
	if r.code != 2 || !strings.Contains(r.stderr, "from --listen or JWKSVERIFY_LISTEN") {
		t.Fatalf("env listen=nowhere: exit %d, stderr %q; want 2 naming JWKSVERIFY_LISTEN", r.code, r.stderr)
	}
	r = runBin(t, []string{"JWKSVERIFY_LOG_LEVEL=loud"}, "", "serve", "--config", cfg)
	if r.code != 2 || !strings.Contains(r.stderr, "JWKSVERIFY_LOG_LEVEL") {
		t.Fatalf("env log level=loud: exit %d, stderr %q; want 2 naming JWKSVERIFY_LOG_LEVEL", r.code, r.stderr)
	}

	// The flags win over the bad environment values: the service starts.
	p := startBin(t, []string{"JWKSVERIFY_LISTEN=nowhere", "JWKSVERIFY_LOG_LEVEL=loud", "JWKSVERIFY_CONFIG=" + cfg}, nil,
		"serve", "--listen", "127.0.0.1:0", "--log-level", "info")
	line := p.waitLog(t, "listening")
	if addr, _ := line["http"].(string); !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Errorf("listening http = %q, want 127.0.0.1:<port>", addr)
	}
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit %d after SIGINT, want 0; stderr:\n%s", code, p.stderr.String())
	}
}
