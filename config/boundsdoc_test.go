package config

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// TestDocsBoundsAreTheLibraries reads the bounds column of CONFIG.md for
// every key whose range a library's exported bounds (or this package's
// checks) set, and compares it with them, as TestDocsDefaultsAreTheLibraries
// does for the defaults: a range the doc states from memory cannot drift.
func TestDocsBoundsAreTheLibraries(t *testing.T) {
	doc := configDoc(t)
	span := func(lo, hi time.Duration) string { return "[" + short(lo) + ", " + short(hi) + "]" }
	ints := func(lo, hi int64) string { return fmt.Sprintf("[%d, %d]", lo, hi) }
	want := map[string]string{
		"shutdown_timeout":                           span(time.Second, 10*time.Minute),
		"shutdown_delay":                             span(0, time.Minute),
		"issuers[].leeway":                           span(0, verify.MaxLeeway),
		"issuers[].refresh.fetch_timeout":            span(jwks.MinAnyInterval, jwks.MaxFetchTimeout),
		"issuers[].refresh.min_interval":             "≥ " + short(jwks.MinAnyInterval),
		"issuers[].refresh.max_interval":             "≥ " + short(jwks.MinAnyInterval),
		"issuers[].refresh.default_ttl":              "≥ " + short(jwks.MinAnyInterval),
		"issuers[].refresh.unknown_kid_interval":     "≥ " + short(jwks.MinAnyInterval),
		"issuers[].refresh.stale_for":                "≥ " + short(jwks.MinAnyInterval),
		"issuers[].introspection.cache.max_ttl":      "≥ " + short(introspect.MinTTL),
		"issuers[].introspection.cache.negative_ttl": "≥ " + short(introspect.MinTTL),
		"issuers[].introspection.cache.stale_for":    "≥ " + short(introspect.MinTTL),
		"issuers[].introspection.cache.max_entries":  ints(1, introspect.MaxMaxEntries),
		"issuers[].introspection.max_concurrent":     ints(1, introspect.MaxMaxConcurrent),
		"issuers[].introspection.max_wait":           span(introspect.MinMaxWait, introspect.MaxMaxWait),
		"dpop.max_age":                               span(dpop.MinMaxAge, dpop.MaxMaxAge),
		"dpop.replay_max_entries":                    ints(1, replay.MaxMaxEntries),
		"redis.timeout":                              span(redisconn.MinTimeout, redisconn.MaxTimeout),
		"redis.pool_size":                            ints(1, redisconn.MaxPoolSize),
		"redis.acknowledge_replicas":                 ints(0, redisconn.MaxAcknowledgeReplicas),
		"token_cache.max_entries":                    ints(0, verify.MaxCacheEntries),
		"token_cache.max_bytes":                      ints(0, verify.MaxCacheBytes),
		"log.rejections_per_second":                  ints(0, server.MaxRejectionLogRate),
		"limits.max_token_bytes":                     ints(verify.MinMaxTokenBytes, verify.MaxMaxTokenBytes),
		"limits.max_body_bytes":                      fmt.Sprintf("[`max_token_bytes`, %d]", server.MaxMaxBodyBytes),
		"limits.max_jwks_bytes":                      ints(jwks.MinMaxBytes, jwks.MaxMaxBytes),
		"limits.max_keys":                            ints(1, jwks.MaxMaxKeys),
		"batch.max_tokens":                           ints(1, server.MaxMaxBatch),
		"introspection.clients[].secret_env":         fmt.Sprintf("at least %d bytes", server.MinClientSecretBytes),
		"issuers[].jwks_url":                         fmt.Sprintf("at most %d redirects", jwks.DefaultMaxRedirects),
		"revocation.retention":                       span(minRetention, maxRetention),
		"revocation.max_staleness":                   span(minMaxStaleness, maxMaxStaleness),
	}
	for key, bound := range want {
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(key) + "` \\|.*$").Find(doc)
		if row == nil {
			t.Errorf("CONFIG.md has no row for `%s`", key)
		} else if !strings.Contains(string(row), bound) {
			t.Errorf("CONFIG.md's row for `%s` does not give its bound %s: %s", key, bound, row)
		}
	}
}
