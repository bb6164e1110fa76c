package config

import (
	"strings"
	"testing"
)

// TestYAMLKeyFormsRefused: a key the reader cannot see is refused. An
// alias as a key (`*k : true`) escaped the alias check (it looked at
// values only), and a `!!binary` key is decoded before it is matched: both
// set allow_insecure_http with no such word on the line, and a `!!binary`
// claim name repeated a claims_to_headers key (yaml compares the keys as
// written, then the second value silently replaced the first).
func TestYAMLKeyFormsRefused(t *testing.T) {
	for _, tt := range []struct{ name, doc string }{
		{"alias-key", disc + "    &k allow_insecure_http: false\n  - issuer: https://b.example.com/\n    discovery: true\n    *k : true\n"},
		{"binary-key", disc + "    !!binary YWxsb3dfaW5zZWN1cmVfaHR0cA==: true\n"},
		{"binary-key-repeats-map-key", disc + "    claims_to_headers: {sub: X-Sub, !!binary c3Vi: X-Other}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, tt.doc)
			if err == nil {
				t.Errorf("Parse() accepted it: allow_insecure_http %v %v, claims_to_headers %v",
					p.Issuers[0].JWKS.InsecureAllowHTTP, p.Issuers[len(p.Issuers)-1].JWKS.InsecureAllowHTTP, p.Server.ClaimsToHeaders)
			}
		})
	}
}

// TestYAMLBinaryValueRefused: a `!!binary` value is decoded from base64
// into a string key: `audiences: [!!binary YXBp]` is the audience "api".
func TestYAMLBinaryValueRefused(t *testing.T) {
	if p, err := parse(t, disc+"    audiences: [!!binary YXBp]\n"); err == nil {
		t.Errorf("Parse() accepted it: audiences %q", p.Issuers[0].Verify.Audiences)
	}
}

// TestYAML11BooleansRefused: a boolean key is "true or false" (CONFIG.md;
// the refusal says "want a boolean (true or false)"). yaml reads y, yes,
// on (and n, no, off), even quoted, into a bool: `allow_insecure_http:
// "on"` (a string to every YAML 1.2 reader) turned plain http on, while
// "false" quoted is refused.
func TestYAML11BooleansRefused(t *testing.T) {
	for _, v := range []string{"yes", "y", "On", `"on"`, "!!str yes"} {
		t.Run(v, func(t *testing.T) {
			p, err := parse(t, disc+"    allow_insecure_http: "+v+"\n")
			if err == nil {
				t.Errorf("allow_insecure_http: %s loaded as %v; want it refused", v, p.Issuers[0].JWKS.InsecureAllowHTTP)
			} else if !strings.Contains(err.Error(), "issuers[0].allow_insecure_http") {
				t.Errorf("Parse() = %v, want the key named", err)
			}
		})
	}
	for _, v := range []string{"no", `"off"`} {
		if p, err := parse(t, "api_auth: {required: "+v+"}\n"+disc); err == nil {
			t.Errorf("api_auth.required: %s loaded as %v; want it refused", v, p.Server.APIAuth)
		}
	}
	// true and false still load.
	if p := mustParse(t, disc+"    allow_insecure_http: false\n"); p.Issuers[0].JWKS.InsecureAllowHTTP {
		t.Error("allow_insecure_http: false loaded as true")
	}
}

// TestWholeNumbersAsWritten: a whole-number key is read as the number
// written, or refused. yaml truncates a fraction (log.rejections_per_second:
// 0.5 read as 0, "no limit"; token_cache.max_entries: 0.9 as 0, "cache
// off") and reads 010 as octal 8 (YAML 1.2 and JSON-minded readers: 10) —
// redis.acknowledge_replicas: 010 waited for 8 replicas, not 10.
func TestWholeNumbersAsWritten(t *testing.T) {
	for _, tt := range []struct{ name, doc, key string }{
		{"rejections-fraction", "log: {rejections_per_second: 0.5}\n" + disc, "log.rejections_per_second"},
		{"max-entries-fraction", "token_cache: {max_entries: 0.9}\n" + disc, "token_cache.max_entries"},
		{"positive-fraction", "limits: {max_token_bytes: 4096.7}\n" + disc, "limits.max_token_bytes"},
		{"octal", "log: {rejections_per_second: 010}\n" + disc, "log.rejections_per_second"},
		{"octal-positive", "limits: {max_token_bytes: 010000}\n" + disc, "limits.max_token_bytes"},
		{"octal-replicas", "redis: {url: redis://r:6379, acknowledge_replicas: 010}\n" + disc, "redis.acknowledge_replicas"},
		{"hex", "batch: {max_tokens: 0x10}\n" + disc, "batch.max_tokens"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, tt.doc)
			if err == nil {
				t.Errorf("Parse() accepted it: rejections %d, token cache %d, max_token_bytes %d, batch %d",
					p.Server.RejectionLogRate, p.Verify.TokenCache.MaxEntries, p.Verify.MaxTokenBytes, p.Server.MaxBatch)
			} else if !strings.Contains(err.Error(), tt.key) {
				t.Errorf("Parse() = %v, want the key %s named", err, tt.key)
			}
		})
	}
	// Decimal whole numbers still load.
	p := mustParse(t, "log: {rejections_per_second: 10}\nlimits: {max_token_bytes: 10000}\n"+disc)
	if p.Server.RejectionLogRate != 10 || p.Verify.MaxTokenBytes != 10000 {
		t.Errorf("got %d, %d; want 10, 10000", p.Server.RejectionLogRate, p.Verify.MaxTokenBytes)
	}
}
