package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/redisconn"
)

// TestPlanRedis checks the redis section and its older names under dpop:
// each rule is redisconn's (CheckOptions), with the YAML key.
func TestPlanRedis(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"pw", "sentinel-pw", "ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const dpopRedis = "dpop: {replay_store: redis}\n"
	tests := []struct {
		name    string
		doc     string
		env     map[string]string
		wantErr string // "" = valid
		check   func(t *testing.T, p *Plan)
	}{
		{name: "none", doc: disc, check: func(t *testing.T, p *Plan) {
			if p.Redis != nil {
				t.Errorf("Redis = %+v, want nil", p.Redis)
			}
		}},
		{name: "url", doc: disc + "redis: {url: \"redis://127.0.0.1:6379\", timeout: 50ms, acknowledge_replicas: 1, pool_size: 3}\n", check: func(t *testing.T, p *Plan) {
			want := redisconn.Options{URL: "redis://127.0.0.1:6379", Timeout: 50 * time.Millisecond, AcknowledgeReplicas: 1, PoolSize: 3}
			if p.Redis == nil || !redisconn.Same(*p.Redis, want) {
				t.Errorf("Redis = %+v, want %+v", p.Redis, want)
			}
		}},
		{name: "timeout-counts-in-http", doc: disc + "redis: {url: \"redis://127.0.0.1:6379\", timeout: 20s}\n", check: func(t *testing.T, p *Plan) {
			if want := httpTimeouts([]time.Duration{jwks.DefaultUnknownKidWait, 20 * time.Second}); p.HTTP != want {
				t.Errorf("HTTP = %+v, want %+v", p.HTTP, want)
			}
		}},
		{name: "dpop-alias", doc: disc + "dpop: {replay_store: redis, redis_url: \"redis://127.0.0.1:6379\", redis_timeout: 70ms, redis_pool_size: 2}\n", check: func(t *testing.T, p *Plan) {
			if p.Redis == nil || p.Redis.URL != "redis://127.0.0.1:6379" || p.Redis.Timeout != 70*time.Millisecond || p.Redis.PoolSize != 2 {
				t.Errorf("Redis = %+v", p.Redis)
			}
		}},
		{name: "sentinel", doc: disc + dpopRedis + "redis:\n  sentinel: {master: mymaster, addrs: [\"127.0.0.1:26379\", \"127.0.0.1:26380\"], password_file: sentinel-pw}\n  username: app\n  password_file: pw\n", check: func(t *testing.T, p *Plan) {
			o := p.Redis
			if o == nil || o.Mode() != "sentinel" || o.Sentinel.Master != "mymaster" || !slices.Equal(o.Sentinel.Addrs, []string{"127.0.0.1:26379", "127.0.0.1:26380"}) ||
				o.Sentinel.PasswordFile != filepath.Join(dir, "sentinel-pw") || o.PasswordFile != filepath.Join(dir, "pw") || o.Username != "app" {
				t.Errorf("Redis = %+v", o)
			}
		}},
		{name: "cluster-tls", doc: disc + "redis: {cluster: {addrs: [\"127.0.0.1:7000\"]}, tls: {ca_file: ca.pem, cert_file: cert.pem, key_file: key.pem}}\n", check: func(t *testing.T, p *Plan) {
			if o := p.Redis; o == nil || o.Mode() != "cluster" || o.TLS.CAFile != filepath.Join(dir, "ca.pem") || o.TLS.KeyFile != filepath.Join(dir, "key.pem") {
				t.Errorf("Redis = %+v", o)
			}
		}},
		{name: "env-url", doc: disc + dpopRedis, env: map[string]string{"JWKSVERIFY_REDIS_URL": "redis://10.0.0.1:6379"}, check: func(t *testing.T, p *Plan) {
			if p.Redis == nil || p.Redis.URL != "redis://10.0.0.1:6379" {
				t.Errorf("Redis = %+v", p.Redis)
			}
		}},
		{name: "env-dpop-url", doc: disc + dpopRedis, env: map[string]string{"JWKSVERIFY_DPOP_REDIS_URL": "redis://10.0.0.2:6379"}, check: func(t *testing.T, p *Plan) {
			if p.Redis == nil || p.Redis.URL != "redis://10.0.0.2:6379" {
				t.Errorf("Redis = %+v", p.Redis)
			}
		}},
		{name: "both-envs", doc: disc + dpopRedis, env: map[string]string{"JWKSVERIFY_REDIS_URL": "redis://a:1", "JWKSVERIFY_DPOP_REDIS_URL": "redis://b:1"}, wantErr: "JWKSVERIFY_DPOP_REDIS_URL: set, and JWKSVERIFY_REDIS_URL too"},
		{name: "env-url-bad-not-echoed", doc: disc + dpopRedis, env: map[string]string{"JWKSVERIFY_REDIS_URL": "http://u:hunter2@x"}, wantErr: "redis.url (from JWKSVERIFY_REDIS_URL): "},
		{name: "alias-and-key", doc: disc + "dpop: {replay_store: redis, redis_url: \"redis://a:1\"}\nredis: {url: \"redis://b:1\"}\n", wantErr: "dpop.redis_url: set, and redis.url too"},
		{name: "timeout-alias-and-key", doc: disc + "dpop: {replay_store: redis, redis_timeout: 1s}\nredis: {url: \"redis://b:1\", timeout: 1s}\n", wantErr: "dpop.redis_timeout: set, and redis.timeout too"},
		{name: "bad-url-not-echoed", doc: disc + "redis: {url: \"http://user:hunter2@x\"}\n", wantErr: "redis.url: "},
		{name: "alias-bad-url", doc: disc + "dpop: {replay_store: redis, redis_url: \"http://user:hunter2@x\"}\n", wantErr: "dpop.redis_url: "},
		{name: "no-where", doc: disc + "redis: {timeout: 1s}\n", wantErr: "redis.url: empty, and neither Sentinel nor Cluster is set"},
		{name: "two-wheres", doc: disc + "redis: {url: \"redis://a:1\", cluster: {addrs: [\"a:1\"]}}\n", wantErr: "redis: more than one of URL, Sentinel and Cluster"},
		{name: "sentinel-without-master", doc: disc + "redis: {sentinel: {addrs: [\"a:1\"]}}\n", wantErr: "redis.sentinel.master: empty"},
		{name: "sentinel-without-addrs", doc: disc + "redis: {sentinel: {master: m}}\n", wantErr: "redis.sentinel.addrs: empty"},
		{name: "sentinel-bad-addr", doc: disc + "redis: {sentinel: {master: m, addrs: [\"a:1\", \"nope\"]}}\n", wantErr: "redis.sentinel.addrs[1]: \"nope\" is not host:port"},
		{name: "cluster-twice", doc: disc + "redis: {cluster: {addrs: [\"a:1\", \"a:1\"]}}\n", wantErr: "redis.cluster.addrs[1]: \"a:1\" is listed twice"},
		{name: "username-without-password", doc: disc + "redis: {url: \"redis://a:1\", username: u}\n", wantErr: "redis.username: set without PasswordFile"},
		{name: "password-twice", doc: disc + "redis: {url: \"redis://:hunter2@a:1\", password_file: pw}\n", wantErr: "redis.password_file: set, and URL holds a password too"},
		{name: "password-file-missing", doc: disc + "redis: {url: \"redis://a:1\", password_file: missing}\n", wantErr: "redis.password_file: "},
		{name: "tls-without-rediss", doc: disc + "redis: {url: \"redis://a:1\", tls: {ca_file: ca.pem}}\n", wantErr: "redis.tls: set, and URL is redis://"},
		{name: "tls-key-without-cert", doc: disc + "redis: {url: \"rediss://a:1\", tls: {key_file: key.pem}}\n", wantErr: "redis.tls.cert_file: empty"},
		{name: "ack-negative", doc: disc + "redis: {url: \"redis://a:1\", acknowledge_replicas: -1}\n", wantErr: "redis.acknowledge_replicas: -1 is out of range"},
		{name: "dpop-redis-without-section", doc: disc + dpopRedis, wantErr: "dpop.replay_store: redis, and there is no redis section"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			p, err := Parse([]byte(tt.doc), dir, Overrides{}, env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse() = %v", err)
				}
				tt.check(t, p)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse() = %v, want an error containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q repeats the password", err)
			}
			if strings.HasPrefix(tt.wantErr, "redis.") && !strings.Contains(tt.wantErr, "(from") && !strings.HasSuffix(tt.wantErr, "password_file: ") && !errors.Is(err, redisconn.ErrInvalidOptions) {
				t.Errorf("Parse() = %v, want it to match %v", err, redisconn.ErrInvalidOptions)
			}
		})
	}
}

// TestPlanSharedIntrospectionCache: cache.shared needs the redis section
// and a key file; key_file without shared is refused.
func TestPlanSharedIntrospectionCache(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cache-key"), []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	const is = "issuers:\n  - issuer: https://idp.example.com/\n    discovery: true\n    introspection: {url: \"https://idp.example.com/introspect\", "
	const redisURL = "redis: {url: \"redis://127.0.0.1:6379\"}\n"
	tests := []struct {
		name, doc, wantErr string
	}{
		{"shared", is + "cache: {shared: true, key_file: cache-key}}\n" + redisURL, ""},
		{"shared-without-redis", is + "cache: {shared: true, key_file: cache-key}}\n", "issuers[0].introspection.cache.shared: true, and there is no redis section"},
		{"shared-without-key", is + "cache: {shared: true}}\n" + redisURL, "issuers[0].introspection.cache.key_file: empty"},
		{"key-without-shared", is + "cache: {key_file: cache-key}}\n" + redisURL, "issuers[0].introspection.cache.key_file: set, and SharedCache is off"},
		{"key-file-missing", is + "cache: {shared: true, key_file: nope}}\n" + redisURL, "issuers[0].introspection.cache.key_file: "},
		{"shared-with-max-entries", is + "cache: {shared: true, key_file: cache-key, max_entries: 5}}\n" + redisURL, "issuers[0].introspection.cache.max_entries: set, and SharedCache is on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.doc), dir, Overrides{}, noEnv)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse() = %v", err)
				}
				if o := p.Issuers[0].Introspection; !o.SharedCache || o.SharedKeyFile != filepath.Join(dir, "cache-key") {
					t.Errorf("Introspection = %+v", o)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
