package service

import (
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server"
)

// revocations is the open revocation store of a service and what it
// owns: the Redis client of store: redis.
type revocations struct {
	plan   config.Revocation
	store  server.Revocations
	closer func() error
	client *redis.Client // store: redis; closed after the store
}

// openRevocations opens the store p plans (nil: none). store: memory reads
// state_dir now; store: redis starts following Redis in the background
// (its copy is stale, and the service not ready, until the first sync).
func openRevocations(p *config.Revocation, log *slog.Logger) (*revocations, error) {
	if p == nil {
		return nil, nil
	}
	r := &revocations{plan: *p}
	switch p.Store {
	case "redis":
		o, err := redis.ParseURL(p.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("revocation: redis.url is not a Redis URL")
		}
		o.MaxRetries = -1 // a script whose answer was lost is not run twice
		o.ContextTimeoutEnabled = true
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = revoke.DefaultRedisTimeout, revoke.DefaultRedisTimeout, revoke.DefaultRedisTimeout, revoke.DefaultRedisTimeout
		r.client = redis.NewClient(o)
		st, err := revoke.NewRedis(revoke.RedisOptions{Client: r.client, Retention: p.Retention, MaxStaleness: p.MaxStaleness, Logger: log})
		if err != nil {
			r.client.Close()
			return nil, fmt.Errorf("revocation: %w", err)
		}
		r.store, r.closer = st, st.Close
	default:
		st, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: p.StateDir, Retention: p.Retention})
		if err != nil {
			return nil, fmt.Errorf("revocation: %w", err)
		}
		r.store, r.closer = st, st.Close
	}
	return r, nil
}

// close closes the store, then its client. A nil r is none.
func (r *revocations) close() {
	if r == nil {
		return
	}
	_ = r.closer()
	if r.client != nil {
		_ = r.client.Close()
	}
}
