package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
// each proof is one set-if-absent, atomic on the server ([useScript]), so
// of any number of concurrent uses of one proof, across any number of
// replicas, exactly one is fresh. Each use writes a value of its own, so
// that a command the client sends again after losing its reply (go-redis's
// cluster loop does) finds its own value and is fresh, not a replay of
// itself. With the client's AcknowledgeReplicas a proof is fresh only once
// that many replicas hold its key (WAIT), so that a failover right after
// cannot forget it. A failed call is never answered "fresh": it is an
// error. The client reconnects on its own and follows a failover or a slot
// move, so Redis is used again without a restart of jwksverify. It is safe
// for concurrent use; it does not own the client.
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

// useScript sets KEYS[1] to ARGV[1] for ARGV[2] milliseconds if it is
// absent (1), answers 2 if it already holds ARGV[1] (this use's own
// command, sent again after its reply was lost), and 0 if it holds another
// use's value (a replay). It is SET NX PX that knows its caller: SET … NX
// GET would do the same, but only from Redis 7.0 on, and Debian 11's and
// Ubuntu 22.04's servers are 6.0 (the revocation store already needs
// scripting). Its own value found, it writes too (PEXPIRE): a WAIT after
// it then counts the replicas that hold the key, since WAIT covers only
// the writes of its own connection and a command sent again comes on
// another one.
const useScript = `local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 2
end
return 0`

// Use implements dpop.ReplayStore with one [useScript] call on
// prefix+hex(key), bounded by the client's Timeout as a whole.
func (r *Redis) Use(ctx context.Context, key [32]byte, ttl time.Duration, _ time.Time) (bool, error) {
	return r.use(ctx, key, ttl, rand.Text())
}

// use is Use with the value this use writes: one unique to the call.
func (r *Redis) use(ctx context.Context, key [32]byte, ttl time.Duration, value string) (bool, error) {
	ms := max(ttl.Milliseconds(), 1)
	if ttl%time.Millisecond != 0 {
		ms++ // round up: never forget a proof early
	}
	k := r.prefix + hex.EncodeToString(key[:])
	keys := []string{k}
	// One deadline for the call as a whole, counted from here: a check
	// that read Redis slowly leaves the write what is left of Timeout, not
	// a Timeout of its own (the HTTP server's timeouts count Timeout once).
	// A time, not a context, until the write: the check's cached reading
	// costs no allocation.
	deadline := time.Now().Add(r.c.Timeout())
	// A Redis that may evict keys forgets proofs under memory pressure: a
	// replay would then be fresh. Fail closed. The check reads Redis at
	// most once a second per master, within the client's timeout (a failed
	// reading fails the call).
	if err := r.c.CheckNoEviction(ctx, k); err != nil {
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis: %w", err)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var set *redis.Cmd
	var err error
	if r.c.AcknowledgeReplicas() == 0 {
		// One command, no WAIT: no pipeline either (the hot path).
		set = r.c.Eval(ctx, useScript, keys, value, ms)
		err = set.Err()
	} else {
		_, err = r.c.Write(ctx, k, func(p redis.Pipeliner) {
			set = p.Eval(ctx, useScript, keys, value, ms)
		})
	}
	if set == nil { // the write failed before its commands were queued
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis: %w", err)
	}
	res, serr := set.Int64()
	switch {
	case serr == nil && res == 0:
		// Used before: a refusal is safe whatever the WAIT said.
		r.replayed.Add(1)
		return false, nil
	case err != nil:
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis: %w", err)
	case serr != nil:
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis: %w", serr)
	case res != 1 && res != 2:
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis answered %d to the set-if-absent script", res)
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
