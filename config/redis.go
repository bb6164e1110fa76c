package config

import (
	"cmp"
	"fmt"
	"os"

	"github.com/jwksverify/jwksverify/redisconn"
)

// planRedis plans the redis section, with its older names dpop.redis_url,
// dpop.redis_timeout and dpop.redis_pool_size (aliases of redis.url,
// redis.timeout and redis.pool_size) and the URL from the environment
// (JWKSVERIFY_REDIS_URL, or JWKSVERIFY_DPOP_REDIS_URL): p.Redis stays nil
// when none of them is set.
func (f *file) planRedis(p *Plan, env func(string) (string, bool)) error {
	r, d := f.Redis, f.DPoP
	// Each key and its alias: at most one of them is set.
	fields := map[string]string{"URL": "redis.url", "Timeout": "redis.timeout", "PoolSize": "redis.pool_size"}
	for _, a := range []struct {
		key, alias string
		set, other bool
	}{
		{"URL", "dpop.redis_url", d.RedisURL != "", r.URL != ""},
		{"Timeout", "dpop.redis_timeout", d.RedisTimeout != nil, r.Timeout != nil},
		{"PoolSize", "dpop.redis_pool_size", d.RedisPoolSize != nil, r.PoolSize != nil},
	} {
		if a.set && a.other {
			return fmt.Errorf("%s: set, and %s too; keep %[2]s (%[1]s is its older name)", a.alias, fields[a.key])
		}
		if a.set {
			fields[a.key] = a.alias
		}
	}
	o := redisconn.Options{
		URL:      cmp.Or(r.URL, d.RedisURL),
		Sentinel: redisconn.Sentinel{Master: r.Sentinel.Master, Addrs: r.Sentinel.Addrs, PasswordFile: r.Sentinel.PasswordFile},
		Cluster:  redisconn.Cluster{Addrs: r.Cluster.Addrs},
		Username: r.Username, PasswordFile: r.PasswordFile,
		TLS:                 redisconn.TLS{CAFile: r.TLS.CAFile, CertFile: r.TLS.CertFile, KeyFile: r.TLS.KeyFile},
		Timeout:             orDuration(cmp.Or(r.Timeout, d.RedisTimeout), 0),
		PoolSize:            int(deref(cmp.Or(r.PoolSize, d.RedisPoolSize))),
		AcknowledgeReplicas: deref(r.AcknowledgeReplicas),
	}
	envURL, envName := "", ""
	for _, name := range []string{"JWKSVERIFY_REDIS_URL", "JWKSVERIFY_DPOP_REDIS_URL"} {
		if u, ok := env(name); ok {
			if envName != "" {
				return fmt.Errorf("%s: set, and %s too; set one (the second is the older name)", name, envName)
			}
			envURL, envName = u, name
		}
	}
	if envName != "" {
		o.URL = envURL
		fields["URL"] = fields["URL"] + " (from " + envName + ")"
	}
	aliases := d.RedisURL != "" || d.RedisTimeout != nil || d.RedisPoolSize != nil
	switch {
	case aliases && cmp.Or(d.ReplayStore, "memory") == "memory":
		return nil // planSenders refuses the alias set with the memory store
	case unset(r) && !aliases && envName == "":
		return nil // no Redis
	}
	if err := redisconn.CheckOptions(o); err != nil {
		return redisError(err, fields)
	}
	for _, file := range []struct{ path, key string }{
		{o.PasswordFile, "redis.password_file"}, {o.Sentinel.PasswordFile, "redis.sentinel.password_file"},
		{o.TLS.CAFile, "redis.tls.ca_file"}, {o.TLS.CertFile, "redis.tls.cert_file"}, {o.TLS.KeyFile, "redis.tls.key_file"},
	} {
		if file.path == "" {
			continue
		}
		if _, err := os.Stat(file.path); err != nil {
			return fmt.Errorf("%s: %w", file.key, err)
		}
	}
	p.Redis = &o
	return nil
}

// unset reports whether the redis section sets nothing but what its dpop
// aliases could say.
func unset(r fileRedis) bool {
	return r.URL == "" && r.Sentinel.Master == "" && r.Sentinel.Addrs == nil && r.Sentinel.PasswordFile == "" &&
		r.Cluster.Addrs == nil && r.Username == "" && r.PasswordFile == "" && r.TLS == (fileRedisTLS{}) &&
		r.Timeout == nil && r.PoolSize == nil && r.AcknowledgeReplicas == nil
}

// redisError names the key of redisconn's refusal err; fields maps the
// fields that have an alias to the key that was set.
func redisError(err error, fields map[string]string) error {
	keys := map[string]string{
		"Sentinel.Master": "redis.sentinel.master", "Sentinel.Addrs": "redis.sentinel.addrs",
		"Sentinel.PasswordFile": "redis.sentinel.password_file", "Cluster.Addrs": "redis.cluster.addrs",
		"Username": "redis.username", "PasswordFile": "redis.password_file", "TLS": "redis.tls",
		"TLS.CAFile": "redis.tls.ca_file", "TLS.CertFile": "redis.tls.cert_file", "TLS.KeyFile": "redis.tls.key_file",
		"AcknowledgeReplicas": "redis.acknowledge_replicas",
	}
	for k, v := range fields {
		keys[k] = v
	}
	return optionError("redis", err, keys)
}
