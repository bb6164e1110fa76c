package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

func TestConfigDefaults(t *testing.T) {
	fc, err := parseConfig([]byte("issuers:\n  - issuer: https://idp.example.com/\n    discovery: true\n"))
	if err != nil {
		t.Fatalf("parseConfig() = %v", err)
	}
	c, err := fc.resolve(overrides{}, noEnv)
	if err != nil {
		t.Fatalf("resolve() = %v", err)
	}
	is := c.Issuers[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", c.Listen, "127.0.0.1:8080"},
		{"grpc_listen", c.GRPCListen, ""},
		{"shutdown_timeout", c.ShutdownTimeout, 15 * time.Second},
		{"shutdown_delay", c.ShutdownDelay, time.Duration(0)},
		{"token_cache.max_entries", c.TokenCacheMax, 100000},
		{"token_sources", c.TokenSources, []fileTokenSource{{Header: "Authorization", Prefix: "Bearer "}}},
		{"log.level", c.LogLevel, "info"},
		{"log.format", c.LogFormat, "json"},
		{"log.rejections_per_second", c.LogRejections, 20},
		{"limits.max_token_bytes", c.MaxTokenBytes, 16384},
		{"limits.max_body_bytes", c.MaxBodyBytes, int64(65536)},
		{"limits.max_jwks_bytes", c.MaxJWKSBytes, int64(1048576)},
		{"limits.max_keys", c.MaxKeys, 100},
		{"batch.max_tokens", c.MaxBatch, 100},
		{"leeway", is.Leeway, 30 * time.Second},
		{"required_claims", is.RequiredClaims, []string{"exp"}},
		{"algorithms", is.Algorithms, []string(nil)},
		{"refresh.min_interval", is.MinInterval, time.Minute},
		{"refresh.max_interval", is.MaxInterval, 24 * time.Hour},
		{"refresh.default_ttl", is.DefaultTTL, 15 * time.Minute},
		{"refresh.unknown_kid_interval", is.UnknownKidIntvl, 30 * time.Second},
		{"refresh.stale_for", is.StaleFor, 24 * time.Hour},
		{"refresh.fetch_timeout", is.FetchTimeout, 10 * time.Second},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestConfigExplicitZeros(t *testing.T) {
	fc, err := parseConfig([]byte(`
issuers:
  - issuer: a
    jwks_file: x.json
    leeway: 0s
    required_claims: []
    audiences: []
token_cache: {max_entries: 0}
`))
	if err != nil {
		t.Fatalf("parseConfig() = %v", err)
	}
	c, err := fc.resolve(overrides{}, noEnv)
	if err != nil {
		t.Fatalf("resolve() = %v", err)
	}
	is := c.Issuers[0]
	if is.Leeway != 0 || leewayOption(is.Leeway) >= 0 {
		t.Errorf("leeway 0s = %v (verify option %v), want 0 (a negative option: no leeway)", is.Leeway, leewayOption(is.Leeway))
	}
	if is.RequiredClaims == nil || len(is.RequiredClaims) != 0 {
		t.Errorf("required_claims [] = %#v, want an empty non-nil list", is.RequiredClaims)
	}
	if is.Audiences != nil {
		t.Errorf("audiences [] = %#v, want nil (no aud check)", is.Audiences)
	}
	if c.TokenCacheMax != 0 {
		t.Errorf("token_cache.max_entries 0 = %d, want 0 (off)", c.TokenCacheMax)
	}
	if got := leewayOption(30 * time.Second); got != 30*time.Second {
		t.Errorf("leewayOption(30s) = %v, want 30s", got)
	}
}

func TestConfigSecretAlgorithms(t *testing.T) {
	dir := t.TempDir()
	s32 := writeFile(t, dir, "s32", []byte(strings.Repeat("k", 32)))
	s64 := writeFile(t, dir, "s64", []byte(strings.Repeat("k", 64)))
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"32-bytes-only-hs256", "issuers: [{issuer: a, secret_file: " + s32 + "}]", []string{"HS256"}},
		{"64-bytes-all-hs", "issuers: [{issuer: a, secret_file: " + s64 + "}]", []string{"HS256", "HS384", "HS512"}},
		{"with-jwks-file", "issuers: [{issuer: a, secret_file: " + s32 + ", jwks_file: x.json}]",
			append([]string{"HS256"}, asymmetricAlgorithms...)},
		{"explicit", "issuers: [{issuer: a, secret_file: " + s64 + ", algorithms: [HS512]}]", []string{"HS512"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc, err := parseConfig([]byte(tt.yaml))
			if err != nil {
				t.Fatalf("parseConfig() = %v", err)
			}
			c, err := fc.resolve(overrides{}, noEnv)
			if err != nil {
				t.Fatalf("resolve() = %v", err)
			}
			if got := c.Issuers[0].Algorithms; !slices.Equal(got, tt.want) {
				t.Errorf("algorithms = %v, want %v", got, tt.want)
			}
		})
	}
}

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
		{name: "negative-log-rate", yaml: disc + "log: {rejections_per_second: -1}\n", wantField: "log.rejections_per_second: -1 is out of bounds"},
		{name: "no-issuers", yaml: "listen: 127.0.0.1:0\n", wantField: "issuers: at least one"},
		{name: "no-key-source", yaml: "issuers: [{issuer: a}]", wantField: "issuers[0]: exactly one of discovery, jwks_url, jwks_file, secret_file"},
		{name: "two-key-sources", yaml: disc + "    jwks_url: https://idp.example.com/keys\n", wantField: "issuers[0]: exactly one of discovery, jwks_url, jwks_file, secret_file is required (secret_file may also go with jwks_file); got discovery and jwks_url"},
		{name: "empty-issuer", yaml: "issuers: [{issuer: '', jwks_file: x.json}]", wantField: "issuers[0].issuer: empty"},
		{name: "duplicate-issuer", yaml: "issuers: [{issuer: a, jwks_file: x.json}, {issuer: a, jwks_file: y.json}]", wantField: `issuers[1].issuer: "a" is already configured by issuers[0]`},
		{name: "empty-audience", yaml: disc + "  - issuer: b\n    jwks_file: x.json\n    audiences: [api, '']\n", wantField: "issuers[1].audiences[1]: empty audience"},
		{name: "alg-none", yaml: disc + "    algorithms: [RS256, none]\n", wantField: `issuers[0].algorithms[1]: "none" is never accepted`},
		{name: "alg-unknown", yaml: disc + "    algorithms: [RS1024]\n", wantField: `issuers[0].algorithms[0]: unknown algorithm "RS1024"`},
		{name: "hmac-from-remote", yaml: disc + "    algorithms: [HS256]\n", wantField: "issuers[0].algorithms[0]: HS256 needs a local key"},
		{name: "hmac-key-too-short-for-alg", yaml: "issuers: [{issuer: a, secret_file: " + good + ", algorithms: [HS512]}]", wantField: "issuers[0].algorithms[0]: HS512 needs a secret of at least 64 bytes"},
		{name: "secret-too-short", yaml: "issuers: [{issuer: a, secret_file: " + short + "}]", wantField: "issuers[0].secret_file: " + short + " holds 20 bytes; an HMAC secret must be at least 32 bytes"},
		{name: "secret-missing", yaml: "issuers: [{issuer: a, secret_file: " + dir + "/nope}]", wantField: "issuers[0].secret_file: open"},
		{name: "interval-below-1s", yaml: disc + "    refresh: {unknown_kid_interval: 500ms}\n", wantField: "issuers[0].refresh.unknown_kid_interval: 500ms is below the minimum of 1s"},
		{name: "unknown-kid-wait-above-fetch-timeout", yaml: disc + "    refresh: {unknown_kid_wait: 3s, fetch_timeout: 2s}\n", wantField: "issuers[0].refresh.unknown_kid_wait: 3s is not between 0 and fetch_timeout (2s)"},
		{name: "min-above-max", yaml: disc + "    refresh: {min_interval: 2h, max_interval: 1h}\n", wantField: "issuers[0].refresh: min_interval (2h0m0s) is greater than max_interval (1h0m0s)"},
		{name: "not-a-duration", yaml: disc + "    leeway: 30\n", wantField: `issuers[0].leeway: line 4: invalid duration "30"`},
		{name: "shutdown-delay-too-long", yaml: "shutdown_delay: 61s\n" + disc, wantField: "shutdown_delay: 1m1s is out of range [0s, 1m0s]"},
		{name: "shutdown-delay-negative", yaml: "shutdown_delay: -1s\n" + disc, wantField: "shutdown_delay: -1s is out of range [0s, 1m0s]"},
		{name: "leeway-too-large", yaml: disc + "    leeway: 1h\n", wantField: "issuers[0].leeway: 1h0m0s is out of range"},
		{name: "wrong-type", yaml: disc + "token_cache: {max_entries: lots}\n", wantField: `token_cache.max_entries: line 4: want a whole number, got "lots"`},
		{name: "list-expected", yaml: disc + "    audiences: api\n", wantField: "issuers[0].audiences: line 4: want a list"},
		{name: "listen-not-host-port", yaml: "listen: localhost\n" + disc, wantField: `listen: "localhost" is not host:port`},
		{name: "grpc-listen-bad-port", yaml: "grpc_listen: 127.0.0.1:http\n" + disc, wantField: `grpc_listen: "127.0.0.1:http": port "http" is not a number`},
		{name: "grpc-listen-same-as-listen", yaml: "listen: 127.0.0.1:9000\ngrpc_listen: 127.0.0.1:9000\n" + disc, wantField: `grpc_listen: "127.0.0.1:9000" is also the HTTP listen address`},
		{name: "plain-http-remote", yaml: "issuers: [{issuer: a, jwks_url: 'http://idp.example.com/keys'}]", wantField: "issuers[0].jwks_url: plain http is accepted only for loopback hosts"},
		{name: "introspection-secret-unset", yaml: disc + "introspection: {clients: [{id: gw, secret_env: JWKSVERIFY_TEST_UNSET_SECRET}]}\n", wantField: "introspection.clients[0].secret_env: environment variable JWKSVERIFY_TEST_UNSET_SECRET is not set"},
		{name: "log-level", yaml: disc + "log: {level: loud}\n", wantField: `log.level: "loud" is not one of debug, info, warn, error`},
		{name: "token-source-two-places", yaml: disc + "token_sources: [{header: X-Token, cookie: tok}]\n", wantField: "token_sources[0]: exactly one of header, cookie, query"},
		{name: "claim-header-reserved", yaml: disc + "    claims_to_headers: {sub: Content-Length}\n", wantField: "issuers[0].claims_to_headers.sub: \"Content-Length\" is a header"},
		{name: "limits-out-of-range", yaml: disc + "limits: {max_keys: 0}\n", wantField: "limits.max_keys: 0 is out of range"},
		{name: "state-dir-is-a-file", yaml: disc + "state_dir: " + good + "\n", wantField: "state_dir: " + good + " is not a directory"},
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

func TestOverrides(t *testing.T) {
	const file = "listen: 127.0.0.1:1001\ngrpc_listen: 127.0.0.1:2001\nlog: {level: warn}\n" +
		"issuers: [{issuer: a, jwks_file: x.json}]\n"
	tests := []struct {
		name       string
		env        map[string]string
		flags      overrides
		wantListen string
		wantGRPC   string
		wantLevel  string
	}{
		{name: "file", wantListen: "127.0.0.1:1001", wantGRPC: "127.0.0.1:2001", wantLevel: "warn"},
		{name: "env-over-file",
			env:        map[string]string{"JWKSVERIFY_LISTEN": "127.0.0.1:1002", "JWKSVERIFY_GRPC_LISTEN": "127.0.0.1:2002", "JWKSVERIFY_LOG_LEVEL": "debug"},
			wantListen: "127.0.0.1:1002", wantGRPC: "127.0.0.1:2002", wantLevel: "debug"},
		{name: "flag-over-env",
			env:        map[string]string{"JWKSVERIFY_LISTEN": "127.0.0.1:1002", "JWKSVERIFY_LOG_LEVEL": "debug"},
			flags:      overrides{Listen: "127.0.0.1:1003", ListenSet: true, LogLevel: "error", LogLevelSet: true},
			wantListen: "127.0.0.1:1003", wantGRPC: "127.0.0.1:2001", wantLevel: "error"},
		{name: "empty-env-turns-grpc-off", env: map[string]string{"JWKSVERIFY_GRPC_LISTEN": ""},
			wantListen: "127.0.0.1:1001", wantGRPC: "", wantLevel: "warn"},
		{name: "empty-flag-over-env-grpc", env: map[string]string{"JWKSVERIFY_GRPC_LISTEN": "127.0.0.1:2002"},
			flags:      overrides{GRPCListenSet: true},
			wantListen: "127.0.0.1:1001", wantGRPC: "", wantLevel: "warn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc, err := parseConfig([]byte(file))
			if err != nil {
				t.Fatal(err)
			}
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			c, err := fc.resolve(envOverrides(lookup, tt.flags), lookup)
			if err != nil {
				t.Fatalf("resolve() = %v", err)
			}
			if c.Listen != tt.wantListen || c.GRPCListen != tt.wantGRPC || c.LogLevel != tt.wantLevel {
				t.Errorf("listen, grpc_listen, log.level = %q, %q, %q; want %q, %q, %q",
					c.Listen, c.GRPCListen, c.LogLevel, tt.wantListen, tt.wantGRPC, tt.wantLevel)
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

// configKeys walks the yaml tags of t and returns every key path, with
// "[]" for list elements and ".*" for map entries.
func configKeys(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" {
			continue
		}
		path := join(prefix, name)
		out = append(out, path)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft == durationType:
		case ft.Kind() == reflect.Struct:
			out = append(out, configKeys(ft, path)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, configKeys(ft.Elem(), path+"[]")...)
		}
	}
	return out
}

func TestConfigDocsCoverEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := configKeys(reflect.TypeFor[fileConfig](), "")
	if len(keys) < 40 {
		t.Fatalf("found %d keys by reflection, want the whole tree (≥ 40)", len(keys))
	}
	for _, k := range keys {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/CONFIG.md does not document `%s`", k)
		}
	}
}

func TestConfigDocsExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/CONFIG.md has no yaml example")
	}
	for i, b := range blocks {
		if _, err := parseConfig(b[1]); err != nil {
			t.Errorf("docs/CONFIG.md yaml block %d: parseConfig() = %v", i, err)
		}
	}
}

func TestExampleConfig(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "INTROSPECT_SECRET" {
			return "a-long-enough-introspection-secret", true
		}
		return "", false
	}
	c, err := loadConfigFile("../../testdata/config/example.yaml", overrides{}, env)
	if err != nil {
		t.Fatalf("loadConfigFile(example.yaml) = %v", err)
	}
	if len(c.Issuers) != 3 {
		t.Fatalf("issuers = %d, want 3", len(c.Issuers))
	}
	kc := c.Issuers[1]
	if want := filepath.Join("..", "..", "testdata", "idp-jwks", "keycloak.jwks.json"); filepath.Clean(kc.JWKSFile) != want {
		t.Errorf("jwks_file = %q, want %q (relative to the config file)", kc.JWKSFile, want)
	}
	hs := c.Issuers[2]
	if len(hs.Secret) != 64 || hs.Leeway != 0 || !slices.Equal(hs.Algorithms, []string{"HS256"}) {
		t.Errorf("internal-batch: secret %d bytes, leeway %v, algorithms %v; want 64, 0s, [HS256]", len(hs.Secret), hs.Leeway, hs.Algorithms)
	}
	if len(c.Introspection) != 1 || c.Introspection[0].ID != "gateway" {
		t.Errorf("introspection = %+v, want the gateway client", c.Introspection)
	}
	if _, err := loadConfigFile("../../testdata/config/example.yaml", overrides{}, noEnv); err == nil ||
		!strings.Contains(err.Error(), "INTROSPECT_SECRET is not set") {
		t.Errorf("without INTROSPECT_SECRET: %v, want an error naming it", err)
	}
}

// FuzzParseConfig checks that no configuration file makes the parser or
// the validation panic, and that what parses either resolves or is refused
// with an error.
func FuzzParseConfig(f *testing.F) {
	if b, err := os.ReadFile("../../testdata/config/example.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("issuers:\n  - issuer: https://idp.example.com/\n    discovery: true\n"))
	f.Add([]byte("issuers: [{issuer: a, jwks_file: x, refresh: {min_interval: 1s}}]\ntoken_sources: [{query: t}]\n"))
	f.Add([]byte("listen: [1, 2]\nissuers: {a: b}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fc, err := parseConfig(data)
		if err != nil {
			return
		}
		// No file I/O from fuzzed paths.
		fc.StateDir = ""
		for i := range fc.Issuers {
			fc.Issuers[i].SecretFile = ""
		}
		c, err := fc.resolve(overrides{}, noEnv)
		if err == nil && (c.Listen == "" || len(c.Issuers) == 0) {
			t.Fatalf("resolve() accepted a configuration without listen or issuers: %+v", c)
		}
	})
}
