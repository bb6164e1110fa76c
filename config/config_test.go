package config

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

const disc = "issuers:\n  - issuer: https://idp.example.com/\n    discovery: true\n"

func parse(t *testing.T, doc string) (*Plan, error) {
	t.Helper()
	return Parse([]byte(doc), t.TempDir(), Overrides{}, noEnv)
}

func mustParse(t *testing.T, doc string) *Plan {
	t.Helper()
	p, err := parse(t, doc)
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	return p
}

// TestPlanLeavesDefaultsToTheLibraries: an absent key leaves its option
// zero, so that the library that owns it applies its default; only the
// command's own defaults are filled in.
func TestPlanLeavesDefaultsToTheLibraries(t *testing.T) {
	p := mustParse(t, disc)
	is := p.Issuers[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", p.Listen, "127.0.0.1:8080"},
		{"grpc_listen", p.GRPCListen, ""},
		{"shutdown_timeout", p.ShutdownTimeout, 15 * time.Second},
		{"shutdown_delay", p.ShutdownDelay, time.Duration(0)},
		{"token_cache.max_entries", p.Verify.TokenCache.MaxEntries, 100000},
		{"log.format", p.LogFormat, "json"},
		{"log.level", p.LogLevel.String(), "INFO"},
		{"jwks", is.JWKS, jwks.Options{Issuer: "https://idp.example.com/", Discovery: true}},
		{"verify.Issuer", is.Verify, verify.Issuer{Issuer: "https://idp.example.com/"}},
		{"verify.Options", p.Verify, verify.Options{TokenCache: verify.TokenCacheOptions{MaxEntries: 100000}}},
		{"server.Options", p.Server, server.Options{}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %+v, want %+v", c.name, c.got, c.want)
		}
	}
}

// configDoc returns docs/CONFIG.md.
func configDoc(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile("../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// short writes d as CONFIG.md does: 5m, not 5m0s; 24h, not 24h0m0s.
func short(d time.Duration) string {
	s := d.String()
	s = regexp.MustCompile(`([hm])0s$`).ReplaceAllString(s, "$1")
	return regexp.MustCompile(`h0m$`).ReplaceAllString(s, "h")
}

// TestDocsDefaultsAreTheLibraries reads the default column of CONFIG.md for
// every key whose default a library owns, and compares it with the
// library's constant: a second copy of a default cannot drift unnoticed.
func TestDocsDefaultsAreTheLibraries(t *testing.T) {
	doc := configDoc(t)
	want := map[string]string{
		"issuers[].refresh.min_interval":             short(jwks.DefaultMinInterval),
		"revocation.retention":                       short(DefaultRetention),
		"revocation.max_staleness":                   short(DefaultMaxStaleness),
		"issuers[].refresh.max_interval":             short(jwks.DefaultMaxInterval),
		"issuers[].refresh.default_ttl":              short(jwks.DefaultTTL),
		"issuers[].refresh.unknown_kid_interval":     short(jwks.DefaultUnknownKidInterval),
		"issuers[].refresh.unknown_kid_wait":         short(jwks.DefaultUnknownKidWait),
		"issuers[].refresh.stale_for":                short(jwks.DefaultStaleFor),
		"issuers[].refresh.fetch_timeout":            short(jwks.DefaultFetchTimeout),
		"issuers[].leeway":                           short(verify.DefaultLeeway),
		"limits.max_token_bytes":                     strconv.Itoa(verify.DefaultMaxTokenBytes),
		"limits.max_body_bytes":                      strconv.Itoa(server.DefaultMaxBodyBytes),
		"limits.max_jwks_bytes":                      strconv.Itoa(jwks.DefaultMaxBytes),
		"limits.max_keys":                            strconv.Itoa(jwks.DefaultMaxKeys),
		"batch.max_tokens":                           strconv.Itoa(server.DefaultMaxBatch),
		"log.rejections_per_second":                  strconv.Itoa(server.DefaultRejectionLogRate),
		"issuers[].introspection.max_concurrent":     strconv.Itoa(introspect.DefaultMaxConcurrent),
		"issuers[].introspection.max_wait":           introspect.DefaultMaxWait.String(),
		"issuers[].introspection.cache.max_ttl":      short(introspect.DefaultMaxTTL),
		"issuers[].introspection.cache.negative_ttl": short(introspect.DefaultNegativeTTL),
		"issuers[].introspection.cache.stale_for":    short(introspect.DefaultStaleFor),
		"issuers[].introspection.cache.max_entries":  strconv.Itoa(introspect.DefaultMaxEntries),
		"dpop.max_age":                               short(dpop.DefaultMaxAge),
		"dpop.redis_timeout":                         short(redisconn.DefaultTimeout),
		"redis.timeout":                              short(redisconn.DefaultTimeout),
		"redis.acknowledge_replicas":                 "0",
		"dpop.replay_max_entries":                    strconv.Itoa(replay.DefaultMaxEntries),
		"dpop.algorithms":                            "[" + strings.Join(dpop.DefaultAlgorithms(), ", ") + "]",
		"token_cache.max_entries":                    strconv.Itoa(defaultTokenCache),
	}
	for key, def := range want {
		m := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(key) + "` \\| [^|]+ \\| `([^`]*)`").FindSubmatch(doc)
		if m == nil {
			t.Errorf("CONFIG.md has no row for `%s` with a default", key)
		} else if string(m[1]) != def && !sameDuration(string(m[1]), def) {
			t.Errorf("CONFIG.md says `%s` defaults to %s; the library's default is %s", key, m[1], def)
		}
	}
}

// sameDuration reports whether a and b are durations of the same length
// (60s and 1m).
func sameDuration(a, b string) bool {
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	return errA == nil && errB == nil && da == db
}

func TestPlanExplicitZeros(t *testing.T) {
	p := mustParse(t, `
issuers:
  - issuer: a
    jwks_file: x.json
    leeway: 0s
    required_claims: []
    audiences: []
token_cache: {max_entries: 0}
log: {rejections_per_second: 0}
`)
	v := p.Issuers[0].Verify
	if v.Leeway >= 0 {
		t.Errorf("leeway 0s = %v, want negative (verify: no leeway)", v.Leeway)
	}
	if v.RequiredClaims == nil || len(v.RequiredClaims) != 0 {
		t.Errorf("required_claims [] = %#v, want an empty non-nil list", v.RequiredClaims)
	}
	if v.Audiences != nil {
		t.Errorf("audiences [] = %#v, want nil (no aud check)", v.Audiences)
	}
	if p.Verify.TokenCache.MaxEntries != 0 {
		t.Errorf("token_cache.max_entries 0 = %d, want 0 (off)", p.Verify.TokenCache.MaxEntries)
	}
	if p.Server.RejectionLogRate >= 0 {
		t.Errorf("log.rejections_per_second 0 = %d, want negative (server: no limit)", p.Server.RejectionLogRate)
	}
}

func TestPlanSecretAlgorithms(t *testing.T) {
	dir := t.TempDir()
	s32 := filepath.Join(dir, "s32")
	s64 := filepath.Join(dir, "s64")
	os.WriteFile(s32, []byte(strings.Repeat("k", 32)), 0o600)
	os.WriteFile(s64, []byte(strings.Repeat("k", 64)), 0o600)
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"32-bytes-only-hs256", "issuers: [{issuer: a, secret_file: " + s32 + "}]", []string{"HS256"}},
		{"64-bytes-all-hs", "issuers: [{issuer: a, secret_file: " + s64 + "}]", []string{"HS256", "HS384", "HS512"}},
		{"with-jwks-file-the-verifier-default", "issuers: [{issuer: a, secret_file: " + s32 + ", jwks_file: x.json}]", nil},
		{"explicit", "issuers: [{issuer: a, secret_file: " + s64 + ", algorithms: [HS512]}]", []string{"HS512"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := mustParse(t, tt.yaml).Issuers[0]
			if got := is.Verify.Algorithms; !slices.Equal(got, tt.want) || !is.Verify.AllowHMAC {
				t.Errorf("algorithms = %v (AllowHMAC %v), want %v and AllowHMAC", got, is.Verify.AllowHMAC, tt.want)
			}
			if len(is.JWKS.StaticKeys) != 1 || !is.JWKS.StaticKeys[0].Local {
				t.Errorf("StaticKeys = %v, want the secret as one local key", is.JWKS.StaticKeys)
			}
		})
	}
}

// TestSecretFilePublicKeyRefused: a secret_file that holds a public key
// (the IdP's PEM, put where its secret was meant to go) is a configuration
// error naming the file's key: used as an HMAC secret it would let anyone
// with the public key sign HS256 tokens (RFC 8725 §2.1).
func TestSecretFilePublicKeyRefused(t *testing.T) {
	der, err := x509.MarshalPKIXPublicKey(testkeys.Public(testkeys.RSA2048A))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "idp.pem")
	os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)
	_, err = parse(t, "issuers: [{issuer: a, secret_file: "+path+"}]")
	if err == nil || !strings.Contains(err.Error(), "secret_file") || !strings.Contains(err.Error(), "public key material") {
		t.Fatalf("secret_file holding a PEM public key: %v, want refused naming secret_file", err)
	}
}

// TestEveryAlgorithmOfVerify: config accepts exactly verify's table, HMAC
// ones only with a local key.
func TestEveryAlgorithmOfVerify(t *testing.T) {
	for _, alg := range append(verify.Algorithms(), "none", "RS1024", "rs256") {
		t.Run(alg, func(t *testing.T) {
			_, local := parse(t, "issuers: [{issuer: a, jwks_file: x.json, algorithms: ["+alg+"]}]")
			_, remote := parse(t, disc+"    algorithms: ["+alg+"]\n")
			known := verify.CheckAlgorithm(alg) == nil
			if (local == nil) != known {
				t.Errorf("jwks_file issuer with %s: %v, want accepted %v", alg, local, known)
			}
			if (remote == nil) != (known && verify.MinHMACBytes(alg) == 0) {
				t.Errorf("discovery issuer with %s: %v", alg, remote)
			}
		})
	}
}

// TestClaimHeadersAreServers: config refuses exactly the headers
// server.CheckClaimHeader refuses.
func TestClaimHeadersAreServers(t *testing.T) {
	for _, h := range []string{"X-Auth-Subject", "X-User", "Authorization", "Proxy-Authorization", "Cookie",
		"Set-Cookie", "Content-Encoding", "Content-Length", "Content-Type", "Connection", "Host", "Keep-Alive",
		"TE", "Trailer", "Transfer-Encoding", "Upgrade", "WWW-Authenticate", "Forwarded", "X-Forwarded-For",
		"X-Forwarded-Host", "X-Real-IP", "X-Original-URI", "X-Envoy-Auth-Headers-To-Remove", "X-Envoy-Peer"} {
		t.Run(h, func(t *testing.T) {
			_, err := parse(t, disc+"    claims_to_headers: {sub: "+h+"}\n")
			if refused := server.CheckClaimHeader(h) != nil; refused != (err != nil) {
				t.Errorf("claims_to_headers {sub: %s}: %v; server refuses it: %v", h, err, refused)
			}
		})
	}
}

// TestURLsAreJWKS: config accepts exactly the URLs jwks.CheckURL accepts.
func TestURLsAreJWKS(t *testing.T) {
	for _, u := range []string{"https://idp.example.com/keys", "http://idp.example.com/keys", "http://127.0.0.1:9/keys",
		"http://LOCALHOST:9/keys", "http://[::1]:9/keys", "https://u:p@idp.example.com/keys", "ftp://idp.example.com/keys", "https:///keys"} {
		t.Run(u, func(t *testing.T) {
			_, err := parse(t, "issuers: [{issuer: a, jwks_url: '"+u+"'}]")
			if want := jwks.CheckURL(u, false); (want == nil) != (err == nil) {
				t.Errorf("jwks_url %s: %v; jwks.CheckURL: %v", u, err, want)
			}
		})
	}
}

// TestQuerySourceNeedsProxy: a query token source without
// forward_auth.proxy is a configuration error naming the entry.
func TestQuerySourceNeedsProxy(t *testing.T) {
	_, err := parse(t, disc+"token_sources: [{header: X-T}, {query: access_token}]\n")
	if err == nil || !strings.Contains(err.Error(), "token_sources[1]: query") {
		t.Fatalf("parse() = %v, want an error naming token_sources[1]'s query", err)
	}
	for _, p := range []string{"nginx", "traefik", "caddy", "envoy"} {
		if _, err := parse(t, disc+"token_sources: [{query: access_token}]\nforward_auth: {proxy: "+p+"}\n"); err != nil {
			t.Errorf("with proxy %s: parse() = %v", p, err)
		}
	}
}

// TestSurfaceKeys: tls, grpc_tls, admin_listen and api_auth are checked in
// the plan, with the path of the key.
func TestSurfaceKeys(t *testing.T) {
	tests := []struct {
		name, doc, wantErr string
	}{
		{"tls-pair", "tls: {cert_file: c.pem, key_file: k.pem}\n", ""},
		{"tls-cert-only", "tls: {cert_file: c.pem}\n", "tls: cert_file and key_file go together"},
		{"tls-client-require", "tls: {cert_file: c.pem, key_file: k.pem, client_ca_file: ca.pem, client_auth: require}\n", ""},
		{"tls-client-bad", "tls: {cert_file: c.pem, key_file: k.pem, client_ca_file: ca.pem, client_auth: maybe}\n", "tls.client_auth"},
		{"tls-require-without-ca", "tls: {cert_file: c.pem, key_file: k.pem, client_auth: require}\n", "tls.client_auth: require needs client_ca_file"},
		{"tls-ca-without-auth", "tls: {cert_file: c.pem, key_file: k.pem, client_ca_file: ca.pem}\n", "tls.client_ca_file"},
		{"tls-ca-without-pair", "tls: {client_ca_file: ca.pem, client_auth: request}\n", "tls: client_ca_file and client_auth need"},
		{"grpc-tls-cert-only", "grpc_tls: {key_file: k.pem}\n", "grpc_tls: cert_file and key_file go together"},
		{"admin-tls-without-admin-listen", "admin_tls: {cert_file: c.pem, key_file: k.pem}\n", "admin_tls: set without admin_listen"},
		{"admin-tls-cert-only", "admin_listen: 127.0.0.1:9090\nadmin_tls: {cert_file: c.pem}\n", "admin_tls: cert_file and key_file go together"},
		{"admin", "admin_listen: 127.0.0.1:9090\n", ""},
		{"admin-same-as-listen", "listen: 127.0.0.1:8080\nadmin_listen: 127.0.0.1:8080\n", "admin_listen"},
		{"admin-bad", "admin_listen: nope\n", "admin_listen"},
		{"api-auth-nobody", "api_auth: {required: true}\n", "api_auth.required"},
		{"api-auth-cert", "api_auth: {required: true}\ntls: {cert_file: c.pem, key_file: k.pem, client_ca_file: ca.pem, client_auth: request}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, disc+tt.doc)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("parse() = %v, want nil", err)
				}
				if strings.Contains(tt.doc, "admin_listen") != p.Server.SeparateAdmin {
					t.Errorf("Server.SeparateAdmin = %v", p.Server.SeparateAdmin)
				}
				if p.TLS.On() && !filepath.IsAbs(p.TLS.CertFile) {
					t.Errorf("tls.cert_file %q not resolved against the file's directory", p.TLS.CertFile)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("parse() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestTokenSourcesAreServers: config accepts exactly the sources
// server.CheckTokenSource accepts.
func TestTokenSourcesAreServers(t *testing.T) {
	for _, ts := range []server.TokenSource{{Header: "Authorization", Prefix: "Bearer "}, {Cookie: "s"}, {Query: "t"},
		{Header: "X-T", Cookie: "c"}, {Query: "t", Prefix: "Bearer "}, {Header: "X T"}, {Prefix: "x"}} {
		doc := disc + `token_sources: [{header: "` + ts.Header + `", prefix: "` + ts.Prefix + `", cookie: "` + ts.Cookie + `", query: "` + ts.Query + `"}]` + "\n" +
			"forward_auth: {proxy: nginx}\n"
		_, err := parse(t, doc)
		if want := server.CheckTokenSource(ts); (want == nil) != (err == nil) {
			t.Errorf("token_sources [%+v]: %v; server.CheckTokenSource: %v", ts, err, want)
		}
	}
}

// TestRefreshFloorIsJWKS: the floor of every refresh duration is
// jwks.MinAnyInterval.
func TestRefreshFloorIsJWKS(t *testing.T) {
	for _, key := range []string{"min_interval", "max_interval", "default_ttl", "unknown_kid_interval", "stale_for", "fetch_timeout"} {
		below := (jwks.MinAnyInterval - time.Millisecond).String()
		if _, err := parse(t, disc+"    refresh: {"+key+": "+below+"}\n"); err == nil || !strings.Contains(err.Error(), "refresh."+key) {
			t.Errorf("refresh.%s: %s = %v, want refused", key, below, err)
		}
		extra := "" // the default min_interval (1m) above max_interval is refused
		if key == "max_interval" {
			extra = ", min_interval: " + jwks.MinAnyInterval.String()
		}
		if _, err := parse(t, disc+"    refresh: {"+key+": "+jwks.MinAnyInterval.String()+extra+"}\n"); err != nil {
			t.Errorf("refresh.%s: %s = %v, want accepted", key, jwks.MinAnyInterval, err)
		}
	}
}

func TestOverrides(t *testing.T) {
	const file = "listen: 127.0.0.1:1001\ngrpc_listen: 127.0.0.1:2001\nlog: {level: warn}\n" +
		"issuers: [{issuer: a, jwks_file: x.json}]\n"
	str := func(s string) *string { return &s }
	tests := []struct {
		name                            string
		env                             map[string]string
		flags                           Overrides
		wantListen, wantGRPC, wantLevel string
		wantStandardCrypto              bool
	}{
		{name: "file", wantListen: "127.0.0.1:1001", wantGRPC: "127.0.0.1:2001", wantLevel: "WARN"},
		{name: "env-over-file",
			env:        map[string]string{"JWKSVERIFY_LISTEN": "127.0.0.1:1002", "JWKSVERIFY_GRPC_LISTEN": "127.0.0.1:2002", "JWKSVERIFY_LOG_LEVEL": "debug", "JWKSVERIFY_STANDARD_CRYPTO": "1"},
			wantListen: "127.0.0.1:1002", wantGRPC: "127.0.0.1:2002", wantLevel: "DEBUG", wantStandardCrypto: true},
		{name: "flag-over-env",
			env:        map[string]string{"JWKSVERIFY_LISTEN": "127.0.0.1:1002", "JWKSVERIFY_LOG_LEVEL": "debug"},
			flags:      Overrides{Listen: str("127.0.0.1:1003"), LogLevel: str("error")},
			wantListen: "127.0.0.1:1003", wantGRPC: "127.0.0.1:2001", wantLevel: "ERROR"},
		{name: "empty-env-turns-grpc-off", env: map[string]string{"JWKSVERIFY_GRPC_LISTEN": ""},
			wantListen: "127.0.0.1:1001", wantGRPC: "", wantLevel: "WARN"},
		{name: "empty-flag-over-env-grpc", env: map[string]string{"JWKSVERIFY_GRPC_LISTEN": "127.0.0.1:2002"},
			flags:      Overrides{GRPCListen: str("")},
			wantListen: "127.0.0.1:1001", wantGRPC: "", wantLevel: "WARN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			p, err := Parse([]byte(file), "", tt.flags, lookup)
			if err != nil {
				t.Fatalf("Parse() = %v", err)
			}
			if p.Listen != tt.wantListen || p.GRPCListen != tt.wantGRPC || p.LogLevel.String() != tt.wantLevel || p.Verify.StandardCrypto != tt.wantStandardCrypto {
				t.Errorf("listen, grpc_listen, log.level, standard crypto = %q, %q, %v, %v; want %q, %q, %s, %v",
					p.Listen, p.GRPCListen, p.LogLevel, p.Verify.StandardCrypto, tt.wantListen, tt.wantGRPC, tt.wantLevel, tt.wantStandardCrypto)
			}
		})
	}
}

func TestHTTPTimeouts(t *testing.T) {
	tests := []struct {
		name     string
		waits    []time.Duration
		wantWait time.Duration
	}{
		{"local-issuers-only", []time.Duration{0, 0}, time.Second},
		{"one-remote", []time.Duration{500 * time.Millisecond}, 1500 * time.Millisecond},
		{"a-batch-waits-once-per-issuer", []time.Duration{500 * time.Millisecond, 2 * time.Second, 0}, 3500 * time.Millisecond},
		{"long-wait", []time.Duration{4 * time.Minute}, 4*time.Minute + time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := httpTimeouts(tt.waits)
			if got.Wait != tt.wantWait {
				t.Errorf("Wait = %v, want %v", got.Wait, tt.wantWait)
			}
			// A request read in readTimeout that waits Wait is still within
			// Read when net/http would cancel it, and its answer has
			// writeTimeout left before Write closes the connection.
			if got.Read < readTimeout+got.Wait || got.Write < got.Read+writeTimeout || got.ReadHeader != readHeaderTimeout || got.Idle != idleTimeout {
				t.Errorf("httpTimeouts(%v) = %+v: a timeout is shorter than the longest wait allows", tt.waits, got)
			}
		})
	}
	// The plan derives them from the issuers: fetch_timeout no longer
	// matters, unknown_kid_wait does.
	p := mustParse(t, disc+"    refresh: {fetch_timeout: 5m, unknown_kid_wait: 20s}\n  - issuer: b\n    jwks_file: x.json\n")
	if want := httpTimeouts([]time.Duration{20 * time.Second, 0}); p.HTTP != want {
		t.Errorf("plan HTTP = %+v, want %+v", p.HTTP, want)
	}
	if p := mustParse(t, disc+"    refresh: {fetch_timeout: 5m}\n"); p.HTTP.Wait != jwks.DefaultUnknownKidWait+waitMargin {
		t.Errorf("plan HTTP.Wait with the default wait = %v, want %v", p.HTTP.Wait, jwks.DefaultUnknownKidWait+waitMargin)
	}
	// A DPoP check waits once per request for the Redis replay store, up
	// to its timeout; an opaque token for its introspection call.
	redis := disc + "    sender_constraint: {dpop: required}\ndpop: {replay_store: redis, redis_url: \"redis://127.0.0.1:6379\", redis_timeout: 20s}\n"
	if p, want := mustParse(t, redis), httpTimeouts([]time.Duration{jwks.DefaultUnknownKidWait, 20 * time.Second}); p.HTTP != want {
		t.Errorf("plan HTTP with redis_timeout 20s = %+v, want %+v", p.HTTP, want)
	}
	intro := disc + "    introspection: {url: \"https://idp.example.com/introspect\", max_wait: 2s}\n"
	if p, want := mustParse(t, intro), httpTimeouts([]time.Duration{2*time.Second + 5*time.Second}); p.HTTP != want {
		t.Errorf("plan HTTP with introspection = %+v, want %+v", p.HTTP, want)
	}
}

// configKeys walks the yaml tags of t and returns every key path, with
// "[]" for list elements.
func configKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		out = append(out, path)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, configKeys(ft, path)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, configKeys(ft.Elem(), path+"[]")...)
		}
	}
	return out
}

func TestDocsCoverEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := configKeys(reflect.TypeFor[file](), "")
	if len(keys) < 45 {
		t.Fatalf("found %d keys by reflection, want the whole tree (≥ 45)", len(keys))
	}
	for _, k := range keys {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/CONFIG.md does not document `%s`", k)
		}
	}
}

func TestDocsExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/CONFIG.md has no yaml example")
	}
	for i, b := range blocks {
		if _, err := decode(b[1]); err != nil {
			t.Errorf("docs/CONFIG.md yaml block %d: decode() = %v", i, err)
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
	const example = "../testdata/config/example.yaml"
	p, err := Load(example, Overrides{}, env)
	if err != nil {
		t.Fatalf("Load(example.yaml) = %v", err)
	}
	if len(p.Issuers) != 3 {
		t.Fatalf("issuers = %d, want 3", len(p.Issuers))
	}
	if want := filepath.Join("..", "testdata", "idp-jwks", "keycloak.jwks.json"); filepath.Clean(p.Issuers[1].JWKS.File) != want {
		t.Errorf("jwks_file = %q, want %q (relative to the config file)", p.Issuers[1].JWKS.File, want)
	}
	hs := p.Issuers[2]
	if len(hs.JWKS.StaticKeys) != 1 || hs.JWKS.StaticKeys[0].Size != 512 || hs.Verify.Leeway >= 0 || !slices.Equal(hs.Verify.Algorithms, []string{"HS256"}) {
		t.Errorf("internal-batch: %+v; want a 64-byte static key, no leeway, [HS256]", hs.Verify)
	}
	if c := p.Server.IntrospectionClients; len(c) != 1 || c[0].ID != "gateway" {
		t.Errorf("introspection = %+v, want the gateway client", c)
	}
	if _, err := Load(example, Overrides{}, noEnv); err == nil || !strings.Contains(err.Error(), "INTROSPECT_SECRET is not set") {
		t.Errorf("without INTROSPECT_SECRET: %v, want an error naming it", err)
	}
	if _, err := Load(example, Overrides{NoServerSecrets: true}, noEnv); err != nil {
		t.Errorf("NoServerSecrets without INTROSPECT_SECRET: %v, want nil", err)
	}
}

// TestDecodeErrors: strict decoding names the path and line of what it
// refuses.
func TestDecodeErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown-top-level-key", "listn: x\n", `listn: line 1: unknown key "listn"`},
		{"unknown-nested-key", disc + "    refresh: {min_intervall: 5s}\n", `issuers[0].refresh.min_intervall: line 4: unknown key "min_intervall" (did you mean "min_interval"?)`},
		{"did-you-mean-top-level", "listn: x\n", `unknown key "listn" (did you mean "listen"?)`},
		{"did-you-mean-issuer-key", disc + "    audience: [a]\n", `issuers[0].audience: line 4: unknown key "audience" (did you mean "audiences"?)`},
		{"did-you-mean-dash-for-underscore", disc + "    jwks-url: https://x/\n", `unknown key "jwks-url" (did you mean "jwks_url"?)`},
		{"did-you-mean-token-source", disc + "token_sources: [{heder: X-Token}]\n", `unknown key "heder" (did you mean "header"?)`},
		{"did-you-mean-policy-key", disc + "policies: [{name: a, scope: {all: [x]}}]\n", `unknown key "scope" (did you mean "scopes"?)`},
		{"no-guess-when-nothing-is-near", disc + "    frobnicate: 1\n", `unknown key "frobnicate"` + "\x00"},
		{"mis-indented-key-less", "listen: a\nissuers:\n  - issuer: https://x/\n    jwks_url: https://x/j\n   audiences: [a]\n", `line 5: did not find expected '-' indicator: key "audiences" is indented unlike the keys before it; align it with the keys of its mapping (yaml's line 2 is where an enclosing block starts)`},
		{"mis-indented-key-nested", "listen: a\nissuers:\n  - issuer: https://x/\n    refresh:\n      min_interval: 1m\n     max_interval: 2m\n", `line 6: did not find expected key: key "max_interval" is indented unlike the keys before it; align it with the keys of its mapping (yaml's line 2 is where an enclosing block starts)`},
		{"mis-indented-key-top", "listen: a\nlog:\n  level: info\n format: json\n", `line 4: did not find expected key: key "format"`},
		{"mis-indented-key-more", "listen: a\n  grpc_listen: b\n", `line 2: mapping values are not allowed in this context`},
		{"wrong-type", disc + "token_cache: {max_entries: lots}\n", `token_cache.max_entries: line 4: want a whole number, got "lots"`},
		{"long-wrong-value", disc + "token_cache: {max_entries: many-many-entries}\n", `token_cache.max_entries: line 4: want a whole number, got "many-many-entries"`},
		{"list-expected", disc + "    audiences: api\n", `issuers[0].audiences: line 4: want a list, got "api"`},
		{"mapping-expected", "limits: 5\n", `limits: line 1: want a mapping, got "5"`},
		{"bool-expected", disc + "    allow_insecure_http: [x]\n", `issuers[0].allow_insecure_http: line 4: want a boolean (true or false), got a list`},
		{"repeated-key", disc + "    discovery: false\n", `issuers[0].discovery: line 4: key "discovery" repeated (first at line 3)`},
		{"bad-duration", disc + "    leeway: 30\n", `issuers[0].leeway: line 4: want a duration such as 30s, got "30"`},
		{"bad-duration-word", disc + "    leeway: soon\n", `issuers[0].leeway: line 4: want a duration such as 30s, got "soon"`},
		{"bad-duration-nested", disc + "    refresh: {stale_for: 1d}\n", `issuers[0].refresh.stale_for: line 4: want a duration such as 30s, got "1d"`},
		{"duration-not-scalar", disc + "    leeway: {a: 1}\n", `issuers[0].leeway: line 4: want a duration such as 30s, got a mapping`},
		{"alias", "listen: &a x\ngrpc_listen: *a\n", "grpc_listen: line 2: YAML aliases are not supported"},
		{"merge-key", disc + "    <<: {audiences: [evil]}\n", "issuers[0].<<: line 4: YAML merge keys (<<) are not supported"},
		{"merge-key-beside-its-key", disc + "    <<: {leeway: 5s}\n    leeway: 1s\n", "issuers[0].<<: line 4: YAML merge keys (<<) are not supported"},
		{"quoted-merge-spelling-is-a-key", disc + "    \"<<\": {leeway: 5s}\n", `unknown key "<<"`},
		{"two-documents", disc + "---\nlisten: x\n", "more than one YAML document"},
		{"empty", "", "empty configuration"},
		{"not-a-mapping", "- a\n", "line 1: the configuration must be a mapping of keys"},
		{"null-is-absent", "listen: null\n" + disc, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode([]byte(tt.yaml))
			// A want ending in NUL must end the message (nothing follows).
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error()+"\x00", tt.want)) {
				t.Errorf("decode() = %v, want %q", err, tt.want)
			}
		})
	}
}

// FuzzParse: no document makes decoding or planning panic, and what plans
// has a listen address and issuers.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../testdata/config/example.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(disc))
	f.Add([]byte("issuers: [{issuer: a, jwks_file: x, refresh: {min_interval: 1s}}]\ntoken_sources: [{query: t}]\n"))
	f.Add([]byte("listen: [1, 2]\nissuers: {a: b}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := decode(data)
		if err != nil {
			return
		}
		for i := range fl.Issuers { // no file I/O from fuzzed paths
			fl.Issuers[i].SecretFile = ""
		}
		p, err := fl.plan(Overrides{}, noEnv)
		if err == nil && (p.Listen == "" || len(p.Issuers) == 0) {
			t.Fatalf("plan() accepted a configuration without listen or issuers: %+v", p)
		}
	})
}

// TestPlanSenderConstraints checks the dpop, mtls and sender_constraint
// keys: each rule is the library's (dpop.CheckAlgorithm,
// server.ParseConstraintMode, replay.CheckRedisURL), with the YAML path.
func TestPlanSenderConstraints(t *testing.T) {
	const is = "issuers:\n  - issuer: https://idp.example.com/\n    discovery: true\n"
	tests := []struct {
		name    string
		doc     string
		wantErr string // "" = valid
		check   func(t *testing.T, p *Plan)
	}{
		{"off-by-default", disc, "", func(t *testing.T, p *Plan) {
			if p.DPoP != nil || p.Server.SenderConstraints != nil {
				t.Errorf("DPoP = %+v, SenderConstraints = %v; want none", p.DPoP, p.Server.SenderConstraints)
			}
		}},
		{"dpop-optional", is + "    sender_constraint: {dpop: optional, mtls: required}\nmtls: {client_cert_header: X-Client-Cert}\n", "", func(t *testing.T, p *Plan) {
			sc := p.Server.SenderConstraints["https://idp.example.com/"]
			if sc.DPoP != "optional" || sc.MTLS != "required" || p.DPoP == nil || p.DPoP.ReplayStore != "memory" || p.Server.ClientCert.Header != "X-Client-Cert" {
				t.Errorf("plan = %+v, %+v, %+v", sc, p.DPoP, p.Server.ClientCert)
			}
		}},
		{"redis", is + "    sender_constraint: {dpop: required}\ndpop: {replay_store: redis, redis_url: \"redis://127.0.0.1:6379\", redis_timeout: 100ms}\n", "", func(t *testing.T, p *Plan) {
			if p.DPoP.ReplayStore != "redis" || p.Redis == nil || p.Redis.URL != "redis://127.0.0.1:6379" || p.Redis.Timeout != 100*time.Millisecond {
				t.Errorf("DPoP = %+v, Redis = %+v", p.DPoP, p.Redis)
			}
		}},
		{"bad-mode", is + "    sender_constraint: {dpop: sometimes}\n", "issuers[0].sender_constraint.dpop", nil},
		{"hmac-alg", disc + "dpop: {algorithms: [HS256]}\n", "dpop.algorithms[0]", nil},
		{"none-alg", disc + "dpop: {algorithms: [none]}\n", "dpop.algorithms[0]", nil},
		{"max-age-too-long", disc + "dpop: {max_age: 1h}\n", "dpop.max_age", nil},
		{"redis-without-url", disc + "dpop: {replay_store: redis}\n", "dpop.replay_store: redis, and there is no redis section", nil},
		{"url-without-redis", disc + "dpop: {redis_url: \"redis://x:1\"}\n", "dpop.redis_url", nil},
		{"bad-redis-url-not-echoed", disc + "dpop: {replay_store: redis, redis_url: \"http://user:hunter2@x\"}\n", "dpop.redis_url", nil},
		{"unknown-store", disc + "dpop: {replay_store: disk}\n", "dpop.replay_store", nil},
		{"bad-cert-header", disc + "mtls: {client_cert_header: \"bad header\"}\n", "mtls.client_cert_header", nil},
		{"xfcc-behind-nginx", disc + "forward_auth: {proxy: nginx}\nmtls: {xfcc: true}\n", "mtls.xfcc", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, tt.doc)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse() = %v", err)
				}
				tt.check(t, p)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse() = %v, want an error naming %s", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q repeats the password", err)
			}
		})
	}
}

// TestPoliciesIndexTheirClaims: the verifier the plan configures indexes
// every claim the policies read — scopes, matchers and the claims an
// expression names — so a policy on a token-cache hit scans nothing.
func TestPoliciesIndexTheirClaims(t *testing.T) {
	p, err := parse(t, disc+`policies:
  - {name: a, scopes: {all: [x]}, claims: [{claim: groups, equals: ops}]}
  - {name: b, expression: 'claims.tid == "t1" && claims["level"] >= 3'}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"groups", "level", "scope", "scp", "tid"}
	if got := p.Verify.IndexClaims; !slices.Equal(got, want) {
		t.Errorf("Verify.IndexClaims = %q, want %q", got, want)
	}
}

// TestLibraryBounds: the range of each key below is the one its library
// checks (its exported bounds): the bound loads, one step past it is
// refused naming the YAML key, and an explicit zero (the library's
// default) is refused at decode. A copy of a bound here would drift.
func TestLibraryBounds(t *testing.T) {
	const redis = "dpop: {replay_store: redis, redis_url: \"redis://127.0.0.1:6379\", "
	const redisURL = "redis: {url: \"redis://127.0.0.1:6379\", "
	// Keys whose 0 means something: no leeway, no cache.
	zeroOK := map[string]bool{"issuers[0].leeway": true, "token_cache.max_entries": true, "log.rejections_per_second": true, "crypto.cross_check_rate": true}
	d := func(v time.Duration) string { return v.String() }
	n := strconv.Itoa
	// The sentinel of the library that refuses each key's option.
	sentinel := func(key string) error {
		switch {
		case strings.Contains(key, ".introspection."):
			return introspect.ErrInvalidOptions
		case key == "issuers[0].leeway", key == "limits.max_token_bytes", strings.HasPrefix(key, "token_cache."), strings.HasPrefix(key, "crypto."):
			return verify.ErrInvalidOptions
		case strings.HasPrefix(key, "dpop.redis_"), strings.HasPrefix(key, "redis."):
			return redisconn.ErrInvalidOptions
		case strings.HasPrefix(key, "dpop.re"):
			return replay.ErrInvalidOptions
		case strings.HasPrefix(key, "dpop."):
			return dpop.ErrInvalidOptions
		case key == "limits.max_body_bytes", key == "batch.max_tokens", strings.HasPrefix(key, "log."):
			return server.ErrInvalidOptions
		}
		return jwks.ErrInvalidOptions
	}
	for _, tt := range []struct {
		key       string // YAML path in errors
		doc       func(v string) string
		ok, wrong string
	}{
		{"limits.max_keys", func(v string) string { return disc + "limits: {max_keys: " + v + "}\n" }, n(jwks.MaxMaxKeys), n(jwks.MaxMaxKeys + 1)},
		{"limits.max_jwks_bytes", func(v string) string { return disc + "limits: {max_jwks_bytes: " + v + "}\n" }, n(jwks.MinMaxBytes), n(jwks.MinMaxBytes - 1)},
		{"limits.max_jwks_bytes", func(v string) string { return disc + "limits: {max_jwks_bytes: " + v + "}\n" }, n(jwks.MaxMaxBytes), n(jwks.MaxMaxBytes + 1)},
		{"issuers[0].refresh.fetch_timeout", func(v string) string { return disc + "    refresh: {fetch_timeout: " + v + "}\n" }, d(jwks.MaxFetchTimeout), d(jwks.MaxFetchTimeout + time.Second)},
		{"issuers[0].introspection.max_concurrent", func(v string) string { return disc + "    introspection: {max_concurrent: " + v + "}\n" }, n(introspect.MaxMaxConcurrent), n(introspect.MaxMaxConcurrent + 1)},
		{"issuers[0].introspection.max_wait", func(v string) string { return disc + "    introspection: {max_wait: " + v + "}\n" }, d(introspect.MaxMaxWait), d(introspect.MaxMaxWait + time.Millisecond)},
		{"issuers[0].introspection.max_wait", func(v string) string { return disc + "    introspection: {max_wait: " + v + "}\n" }, d(introspect.MinMaxWait), d(introspect.MinMaxWait - time.Microsecond)},
		{"issuers[0].introspection.cache.max_entries", func(v string) string { return disc + "    introspection: {cache: {max_entries: " + v + "}}\n" }, n(introspect.MaxMaxEntries), n(introspect.MaxMaxEntries + 1)},
		{"issuers[0].introspection.cache.negative_ttl", func(v string) string { return disc + "    introspection: {cache: {negative_ttl: " + v + "}}\n" }, d(introspect.MinTTL), d(introspect.MinTTL - time.Millisecond)},
		{"dpop.max_age", func(v string) string { return disc + "dpop: {max_age: " + v + "}\n" }, d(dpop.MaxMaxAge), d(dpop.MaxMaxAge + time.Second)},
		{"issuers[0].leeway", func(v string) string { return disc + "    leeway: " + v + "\n" }, d(verify.MaxLeeway), d(verify.MaxLeeway + time.Second)},
		{"limits.max_token_bytes", func(v string) string { return disc + "limits: {max_token_bytes: " + v + "}\n" }, n(verify.MinMaxTokenBytes), n(verify.MinMaxTokenBytes - 1)},
		{"limits.max_token_bytes", func(v string) string { return disc + "limits: {max_token_bytes: " + v + "}\n" }, n(verify.MaxMaxTokenBytes), n(verify.MaxMaxTokenBytes + 1)},
		{"token_cache.max_entries", func(v string) string { return disc + "token_cache: {max_entries: " + v + "}\n" }, n(verify.MaxCacheEntries), n(verify.MaxCacheEntries + 1)},
		{"dpop.max_age", func(v string) string { return disc + "dpop: {max_age: " + v + "}\n" }, d(dpop.MinMaxAge), d(dpop.MinMaxAge - time.Millisecond)},
		{"dpop.replay_max_entries", func(v string) string { return disc + "dpop: {replay_max_entries: " + v + "}\n" }, n(replay.MaxMaxEntries), n(replay.MaxMaxEntries + 1)},
		{"dpop.redis_timeout", func(v string) string { return disc + redis + "redis_timeout: " + v + "}\n" }, d(redisconn.MaxTimeout), d(redisconn.MaxTimeout + time.Millisecond)},
		{"dpop.redis_pool_size", func(v string) string { return disc + redis + "redis_pool_size: " + v + "}\n" }, n(redisconn.MaxPoolSize), n(redisconn.MaxPoolSize + 1)},
		{"redis.timeout", func(v string) string { return disc + redisURL + "timeout: " + v + "}\n" }, d(redisconn.MaxTimeout), d(redisconn.MaxTimeout + time.Millisecond)},
		{"redis.timeout", func(v string) string { return disc + redisURL + "timeout: " + v + "}\n" }, d(redisconn.MinTimeout), d(redisconn.MinTimeout - time.Microsecond)},
		{"redis.pool_size", func(v string) string { return disc + redisURL + "pool_size: " + v + "}\n" }, n(redisconn.MaxPoolSize), n(redisconn.MaxPoolSize + 1)},
		{"limits.max_body_bytes", func(v string) string { return disc + "limits: {max_body_bytes: " + v + "}\n" }, n(server.MaxMaxBodyBytes), n(server.MaxMaxBodyBytes + 1)},
		{"limits.max_body_bytes", func(v string) string { return disc + "limits: {max_body_bytes: " + v + "}\n" }, n(verify.DefaultMaxTokenBytes), n(verify.DefaultMaxTokenBytes - 1)},
		{"limits.max_body_bytes", func(v string) string {
			return disc + "limits: {max_token_bytes: 2048, max_body_bytes: " + v + "}\n"
		}, "2048", "2047"},
		{"batch.max_tokens", func(v string) string { return disc + "batch: {max_tokens: " + v + "}\n" }, n(server.MaxMaxBatch), n(server.MaxMaxBatch + 1)},
		{"crypto.cross_check_rate", func(v string) string { return disc + "crypto: {cross_check_rate: " + v + "}\n" }, "1", "1.01"},
		{"log.rejections_per_second", func(v string) string { return disc + "log: {rejections_per_second: " + v + "}\n" }, n(server.MaxRejectionLogRate), n(server.MaxRejectionLogRate + 1)},
	} {
		t.Run(tt.key+"="+tt.wrong, func(t *testing.T) {
			if _, err := parse(t, tt.doc(tt.ok)); err != nil {
				t.Errorf("%s: %s = %v, want accepted", tt.key, tt.ok, err)
			}
			_, err := parse(t, tt.doc(tt.wrong))
			if err == nil || !strings.HasPrefix(err.Error(), tt.key+": ") {
				t.Errorf("%s: %s = %v, want refused naming %s", tt.key, tt.wrong, err, tt.key)
			}
			// The library's refusal is kept whole: its sentinel matches.
			if want := sentinel(tt.key); !errors.Is(err, want) {
				t.Errorf("%s: %s = %v, want an error matching %v", tt.key, tt.wrong, err, want)
			}
			if zeroOK[tt.key] {
				return
			}
			if _, err := parse(t, tt.doc("0")); err == nil || !strings.Contains(err.Error(), tt.key+": line ") || !strings.Contains(err.Error(), "above zero") && !strings.Contains(err.Error(), "at least 1") {
				t.Errorf("%s: 0 = %v, want refused at decode naming %s", tt.key, err, tt.key)
			}
		})
	}
	// server's rules on introspection clients, with the YAML key.
	secrets := map[string]string{"S_OK": strings.Repeat("s", server.MinClientSecretBytes), "S_SHORT": strings.Repeat("s", server.MinClientSecretBytes-1)}
	env := func(k string) (string, bool) { v, ok := secrets[k]; return v, ok }
	for doc, want := range map[string]string{
		"introspection: {clients: [{id: gw, secret_env: S_OK}]}\n":                             "",
		"introspection: {clients: [{id: gw, secret_env: S_SHORT}]}\n":                          "introspection.clients[0]: the secret is shorter than",
		"introspection: {clients: [{id: gw, secret_env: S_OK}, {id: gw, secret_env: S_OK}]}\n": "introspection.clients[1]: id \"gw\" is listed twice",
		"introspection: {clients: [{id: \"g:w\", secret_env: S_OK}]}\n":                        "introspection.clients[0]: id \"g:w\" contains a colon",
	} {
		_, err := Parse([]byte(disc+doc), t.TempDir(), Overrides{}, env)
		if (err == nil) != (want == "") || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%s= %v, want %q", doc, err, want)
		}
	}
	// introspect's pairing rule, with the YAML key.
	if _, err := parse(t, disc+"    introspection: {client_id: a}\n"); err == nil || !strings.Contains(err.Error(), "issuers[0].introspection.client_id: set without ClientSecretFile") {
		t.Errorf("client_id without client_secret_file = %v, want refused naming the key", err)
	}
	// A redis option with the memory store is refused, not ignored.
	if _, err := parse(t, disc+"dpop: {redis_timeout: 1s}\n"); err == nil || !strings.Contains(err.Error(), "dpop.redis_timeout: set, and dpop.replay_store is memory") {
		t.Errorf("redis_timeout with the memory store = %v, want refused", err)
	}
}

// TestPlanIDToken: id_token's client IDs and azp mode reach the verifier;
// each refusal names its key.
func TestPlanIDToken(t *testing.T) {
	const is = "issuers:\n  - issuer: https://idp.example.com/\n    discovery: true\n"
	tests := []struct {
		name    string
		doc     string
		wantErr string // "" = valid
		want    verify.IDTokenPolicy
	}{
		{"absent", is, "", verify.IDTokenPolicy{}},
		{"client-ids", is + "    id_token: {client_ids: [web-app]}\n", "", verify.IDTokenPolicy{ClientIDs: []string{"web-app"}}},
		{"azp-off", is + "    id_token: {client_ids: [web, android], azp: off}\n", "", verify.IDTokenPolicy{ClientIDs: []string{"web", "android"}, AZP: verify.AZPOff}},
		{"no-client-ids", is + "    id_token: {azp: always}\n", "issuers[0].id_token.client_ids", verify.IDTokenPolicy{}},
		{"empty-client-id", is + "    id_token: {client_ids: [\"\"]}\n", "issuers[0].id_token.client_ids[0]", verify.IDTokenPolicy{}},
		{"bad-azp", is + "    id_token: {client_ids: [a], azp: sometimes}\n", "issuers[0].id_token.azp", verify.IDTokenPolicy{}},
		{"unknown-key", is + "    id_token: {client_id: a}\n", "client_id", verify.IDTokenPolicy{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, tt.doc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse() = %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() = %v", err)
			}
			if got := p.Issuers[0].Verify.IDToken; !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("IDToken = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestPlanRevocation: the revocation section, redis.url and max_lifetime,
// each refusal naming its key.
func TestPlanRevocation(t *testing.T) {
	const is = "issuers:\n  - issuer: https://idp.example.com/\n    discovery: true\n"
	tests := []struct {
		name    string
		doc     string
		wantErr string // "" = valid
		check   func(t *testing.T, p *Plan)
	}{
		{"off-by-default", disc, "", func(t *testing.T, p *Plan) {
			if p.Revocation != nil || p.Issuers[0].Verify.MaxLifetime != 0 {
				t.Errorf("Revocation = %+v, MaxLifetime = %s; want none", p.Revocation, p.Issuers[0].Verify.MaxLifetime)
			}
		}},
		{"max-lifetime-without-revocation", is + "    max_lifetime: 2h\n", "", func(t *testing.T, p *Plan) {
			if p.Issuers[0].Verify.MaxLifetime != 2*time.Hour {
				t.Errorf("MaxLifetime = %s, want 2h", p.Issuers[0].Verify.MaxLifetime)
			}
		}},
		{"memory", disc + "state_dir: /var/lib/jwksverify\nrevocation: {}\n", "", func(t *testing.T, p *Plan) {
			r := p.Revocation
			if r == nil || r.Store != "memory" || r.Retention != 24*time.Hour || r.MaxStaleness != 0 || r.StateDir != "/var/lib/jwksverify" {
				t.Fatalf("Revocation = %+v", r)
			}
			if p.Issuers[0].Verify.MaxLifetime != 24*time.Hour {
				t.Errorf("MaxLifetime = %s, want the retention", p.Issuers[0].Verify.MaxLifetime)
			}
			for _, c := range server.RevocationClaims() {
				if !slices.Contains(p.Verify.IndexClaims, c) {
					t.Errorf("IndexClaims = %q, want %s", p.Verify.IndexClaims, c)
				}
			}
		}},
		{"redis", is + "    max_lifetime: 1h\nrevocation: {store: redis, retention: 12h, max_staleness: 10s}\nredis: {url: \"redis://127.0.0.1:6379\"}\n", "", func(t *testing.T, p *Plan) {
			r := p.Revocation
			if r.Store != "redis" || r.Retention != 12*time.Hour || r.MaxStaleness != 10*time.Second || p.Redis == nil || p.Redis.URL != "redis://127.0.0.1:6379" {
				t.Errorf("Revocation = %+v", r)
			}
			if p.Issuers[0].Verify.MaxLifetime != time.Hour {
				t.Errorf("MaxLifetime = %s, want 1h", p.Issuers[0].Verify.MaxLifetime)
			}
		}},
		{"memory-without-state-dir", disc + "revocation: {store: memory}\n", "state_dir", nil},
		{"memory-max-staleness", disc + "state_dir: /x\nrevocation: {max_staleness: 5s}\n", "revocation.max_staleness", nil},
		{"redis-without-redis", disc + "revocation: {store: redis}\n", "redis.url", nil},
		{"redis-bad-url-not-echoed", disc + "revocation: {store: redis}\nredis: {url: \"http://u:hunter2@x\"}\n", "redis.url", nil},
		{"unknown-store", disc + "revocation: {store: disk}\n", "revocation.store", nil},
		{"retention-too-short", disc + "state_dir: /x\nrevocation: {retention: 1s}\n", "revocation.retention", nil},
		{"max-staleness-too-long", disc + "revocation: {store: redis, max_staleness: 2h}\nredis: {url: \"redis://x:1\"}\n", "revocation.max_staleness", nil},
		{"max-lifetime-above-retention", is + "    max_lifetime: 48h\nstate_dir: /x\nrevocation: {}\n", "issuers[0].max_lifetime", nil},
		{"max-lifetime-zero", is + "    max_lifetime: 0\n", "issuers[0].max_lifetime", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, tt.doc)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse() = %v", err)
				}
				tt.check(t, p)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse() = %v, want an error naming %s", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q repeats the password", err)
			}
		})
	}
}

// TestDocsMainExamplePlans: the example of CONFIG.md, "Example", which
// writes the main keys with their defaults, is a configuration serve
// starts with once its files exist (its absolute paths moved into a temp
// dir). Writing a default out (tls.client_auth: none without a
// certificate) must mean what leaving it out means.
func TestDocsMainExamplePlans(t *testing.T) {
	m := regexp.MustCompile("(?s)## Example\n.*?```yaml\n(.*?)```").FindSubmatch(configDoc(t))
	if m == nil {
		t.Fatal(`docs/CONFIG.md has no yaml block under "## Example"`)
	}
	dir := t.TempDir()
	jwksFile, err := os.ReadFile("../testdata/idp-jwks/keycloak.jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"keycloak.jwks.json": jwksFile, "hs256": []byte(strings.Repeat("k", 32))} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	doc := strings.NewReplacer("/run/secrets/hs256", "hs256", "/var/lib/jwksverify", "state").Replace(string(m[1]))
	env := func(k string) (string, bool) {
		if k == "INTROSPECT_SECRET" {
			return "a-long-enough-introspection-secret", true
		}
		return "", false
	}
	if _, err := Parse([]byte(doc), dir, Overrides{}, env); err != nil {
		t.Fatalf("Parse(CONFIG.md example) = %v", err)
	}
}

// TestTLSClientAuthNoneWithoutCertificate: client_auth none is the
// default, so writing it out on a plaintext listener is accepted; asking
// for client certificates without a certificate of the listener is not.
func TestTLSClientAuthNoneWithoutCertificate(t *testing.T) {
	tests := []struct {
		name, tls, wantErr string
	}{
		{"absent", "", ""},
		{"empty-mapping", "tls: {}\n", ""},
		{"none-written-out", "tls: {cert_file: \"\", key_file: \"\", client_ca_file: \"\", client_auth: none}\n", ""},
		{"grpc-none-written-out", "grpc_tls: {client_auth: none}\n", ""},
		{"request-without-cert", "tls: {client_auth: request}\n", "tls: client_ca_file and client_auth need cert_file and key_file"},
		{"ca-without-cert", "tls: {client_ca_file: ca.pem}\n", "tls: client_ca_file and client_auth need cert_file and key_file"},
		{"unknown-mode", "tls: {client_auth: always}\n", `tls.client_auth: "always" is not one of none, request, require`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.tls + "issuers:\n  - {issuer: https://idp.example.com/, discovery: true}\n"
			_, err := Parse([]byte(doc), t.TempDir(), Overrides{}, noEnv)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Parse = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Parse = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
