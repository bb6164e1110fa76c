package service

import (
	"fmt"
	"log/slog"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server"
)

// revocations is the open revocation store of a service and what it
// owns: the Redis client of store: redis.
type revocations struct {
	store  server.Revocations
	closer func() error
	client *redisconn.Client // store: redis; closed after the store
}

// openRevocations opens the store p plans (nil: none), over a Redis client
// of its own built from ro (the plan's redis section) for store: redis: its
// follower's subscription lives as long as the store, whatever a reload
// does to the service's shared client. store: memory reads state_dir now;
// store: redis starts following Redis in the background (its copy is
// stale, and the service not ready, until the first sync).
func openRevocations(p *config.Revocation, ro *redisconn.Options, log *slog.Logger) (*revocations, error) {
	if p == nil {
		return nil, nil
	}
	r := &revocations{}
	switch p.Store {
	case "redis":
		if ro == nil {
			return nil, fmt.Errorf("revocation: store redis without a redis section")
		}
		c, err := redisconn.New(*ro)
		if err != nil {
			return nil, fmt.Errorf("revocation: %w", err)
		}
		st, err := revoke.NewRedis(revoke.RedisOptions{Client: c, Writer: c, Timeout: c.Timeout(),
			Retention: p.Retention, MaxStaleness: p.MaxStaleness, Logger: log})
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("revocation: %w", err)
		}
		r.store, r.closer, r.client = st, st.Close, c
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
