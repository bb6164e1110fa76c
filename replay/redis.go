package replay

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/redisconn"
)

// DefaultKeyPrefix starts every key of a [Redis] store whose KeyPrefix is
// empty.
const DefaultKeyPrefix = "jwksverify:dpop:"

// RedisOptions configure a [Redis] store.
type RedisOptions struct {
	// KeyPrefix starts every key the store sets. Empty means
	// [DefaultKeyPrefix].
	KeyPrefix string
}

// Redis is a replay store shared by every replica that uses the same Redis
// (a single server, a Sentinel master or a Cluster: one key per proof):
// each proof is one SET key 1 NX PX ttl, atomic on the server, so of any
// number of concurrent uses of one proof, across any number of replicas,
// exactly one is fresh. With the client's AcknowledgeReplicas a proof is
// fresh only once that many replicas hold its key (WAIT), so that a
// failover right after cannot forget it. A failed call is never retried (a
// SET whose reply was lost may have been applied: retrying would refuse the
// proof as replayed) and never answered "fresh": it is an error. The client
// reconnects on its own and follows a failover or a slot move, so Redis is
// used again without a restart of jwksverify. It is safe for concurrent
// use; it does not own the client.
type Redis struct {
	c      *redisconn.Client
	prefix string

	fresh, replayed, failed atomic.Uint64
}

// RedisStats are a Redis store's counters.
type RedisStats struct {
	// Fresh and Replayed count the answers; Errors the calls that failed.
	Fresh, Replayed, Errors uint64
}

// NewRedis returns a Redis store over c, which the caller owns and closes
// after the store's last use. It does not connect.
func NewRedis(c *redisconn.Client, opts RedisOptions) (*Redis, error) {
	if c == nil {
		return nil, invalidOption("", "no Redis client")
	}
	prefix := opts.KeyPrefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	return &Redis{c: c, prefix: prefix}, nil
}

// Use implements dpop.ReplayStore with SET prefix+hex(key) 1 NX PX ttl,
// bounded by the client's Timeout as a whole.
func (r *Redis) Use(ctx context.Context, key [32]byte, ttl time.Duration, _ time.Time) (bool, error) {
	ms := max(ttl.Milliseconds(), 1)
	if ttl%time.Millisecond != 0 {
		ms++ // round up: never forget a proof early
	}
	k := r.prefix + hex.EncodeToString(key[:])
	var set *redis.Cmd
	var err error
	if r.c.AcknowledgeReplicas() == 0 {
		// One command, no WAIT: no pipeline either (the hot path). One
		// deadline for the call keeps it within Timeout as a whole.
		ctx, cancel := context.WithTimeout(ctx, r.c.Timeout())
		defer cancel()
		set = r.c.Do(ctx, "SET", k, "1", "NX", "PX", ms)
		if err = set.Err(); errors.Is(err, redis.Nil) {
			err = nil
		}
	} else {
		_, err = r.c.Write(ctx, k, func(p redis.Pipeliner) {
			set = p.Do(ctx, "SET", k, "1", "NX", "PX", ms)
		})
	}
	if set == nil { // the write failed before its commands were queued
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis: %w", err)
	}
	res, serr := set.Result()
	switch {
	case errors.Is(serr, redis.Nil):
		// Used before: a refusal is safe whatever the WAIT said.
		r.replayed.Add(1)
		return false, nil
	case err != nil:
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis: %w", err)
	case serr != nil:
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis: %w", serr)
	case res != "OK":
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis answered %v to SET NX", res)
	}
	r.fresh.Add(1)
	return true, nil
}

// Ping checks that the server answers, within the client's Timeout.
func (r *Redis) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.c.Timeout())
	defer cancel()
	if err := r.c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("replay: redis: %w", err)
	}
	return nil
}

// Stats returns the store's counters. It is safe for concurrent use.
func (r *Redis) Stats() RedisStats {
	return RedisStats{Fresh: r.fresh.Load(), Replayed: r.replayed.Load(), Errors: r.failed.Load()}
}
