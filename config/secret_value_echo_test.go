package config

import (
	"strings"
	"testing"
)

// TestMisplacedURLPasswordNotEchoed: a value of the wrong type is quoted
// whole in its error ("want a mapping, got …"), so a Redis URL written
// where the redis section or a list belongs (`redis: redis://:PW@host`,
// the shape of the older dpop.redis_url) put its password in the start log
// and in `jwksverify check`'s output, which redis.url's own check never
// repeats. The error still names the key, the line and what was wanted.
func TestMisplacedURLPasswordNotEchoed(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"redis-section-as-url", disc + "redis: \"redis://:hunter2@redis:6379\"\n", "redis: line 4: want a mapping"},
		{"redis-section-as-plain-url", disc + "redis: redis://user:hunter2@redis:6379/0\n", "redis: line 4: want a mapping"},
		{"sentinel-addrs-as-url", disc + "redis: {sentinel: {master: m, addrs: \"redis://:hunter2@s:26379\"}}\n", "redis.sentinel.addrs: line 4: want a list"},
		{"cluster-addrs-as-url", disc + "redis: {cluster: {addrs: \"user:hunter2@c:7000\"}}\n", "redis.cluster.addrs: line 4: want a list"},
		{"dpop-as-url", disc + "dpop: redis://:hunter2@redis:6379\n", "dpop: line 4: want a mapping"},
		{"issuer-as-url", "issuers:\n  - \"https://u:hunter2@idp.example.com/\"\n", "issuers[0]: line 2: want a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), t.TempDir(), Overrides{}, noEnv)
			if err == nil {
				t.Fatal("Parse() = nil, want an error")
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error repeats the password: %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse() = %v, want it to say %q", err, tt.want)
			}
		})
	}
}
