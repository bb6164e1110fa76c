package replay

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of [RedisOptions].
const (
	DefaultRedisTimeout = 500 * time.Millisecond
	DefaultKeyPrefix    = "jwksverify:dpop:"
)

// Bounds of [RedisOptions] (zero still means the default).
const (
	MinRedisTimeout  = time.Millisecond
	MaxRedisTimeout  = 30 * time.Second
	MaxRedisPoolSize = 10000
)

// RedisOptions configure a [Redis] store.
type RedisOptions struct {
	// URL is the server: redis://[user:password@]host:port[/db], or
	// rediss:// for TLS (verified against the system roots). User and
	// password, when given, authenticate (AUTH). Required. It holds a
	// secret: never log it.
	URL string
	// Timeout bounds each call as a whole — the wait for a pooled
	// connection, dialing, the write and the read together — and each of
	// them: [MinRedisTimeout, MaxRedisTimeout]. Zero means
	// [DefaultRedisTimeout].
	Timeout time.Duration
	// PoolSize is the most connections kept open, at most
	// [MaxRedisPoolSize]. Zero means go-redis's default (10 per CPU).
	PoolSize int
	// KeyPrefix starts every key the store sets. Empty means
	// [DefaultKeyPrefix].
	KeyPrefix string
}

// Redis is a replay store shared by every replica that uses the same Redis:
// each proof is one SET key 1 NX PX ttl, atomic on the server, so of any
// number of concurrent uses of one proof, across any number of replicas,
// exactly one is fresh. A failed call is never retried (a SET whose reply
// was lost may have been applied: retrying would refuse the proof as
// replayed) and never answered "fresh": it is an error. go-redis reconnects
// on its own, so a restarted Redis is used again without a restart of
// jwksverify. It is safe for concurrent use; Close it when done.
type Redis struct {
	c       *redis.Client
	prefix  string
	timeout time.Duration // bounds each call as a whole

	fresh, replayed, failed atomic.Uint64
}

// RedisStats are a Redis store's counters.
type RedisStats struct {
	// Fresh and Replayed count the answers; Errors the calls that failed.
	Fresh, Replayed, Errors uint64
}

// CheckRedisURL reports whether url is a Redis URL that [NewRedis]
// accepts. Its message never holds the URL (which may hold a password).
func CheckRedisURL(url string) error {
	if url == "" {
		return errors.New("empty; want redis://[user:password@]host:port[/db] or rediss://…")
	}
	if _, err := redis.ParseURL(url); err != nil {
		return errors.New("not redis://[user:password@]host:port[/db] or rediss://… (the URL is not repeated here: it may hold a password)")
	}
	return nil
}

// SameRedis reports whether a [Redis] store built from a is one built from
// b would be: every option equal, so that a configuration reload may keep
// the client (its connections) instead of starting another.
func SameRedis(a, b RedisOptions) bool { return a == b }

// CheckRedisOptions reports whether [NewRedis] accepts opts: an error
// wrapping [ErrInvalidOptions] that names the field first if not.
func CheckRedisOptions(opts RedisOptions) error {
	switch {
	case opts.Timeout != 0 && (opts.Timeout < MinRedisTimeout || opts.Timeout > MaxRedisTimeout):
		return invalidOption("Timeout", "%s is out of range [%s, %s]", opts.Timeout, MinRedisTimeout, MaxRedisTimeout)
	case opts.PoolSize < 0 || opts.PoolSize > MaxRedisPoolSize:
		return invalidOption("PoolSize", "%d is out of range [1, %d]", opts.PoolSize, MaxRedisPoolSize)
	}
	if err := CheckRedisURL(opts.URL); err != nil {
		return invalidOption("URL", "%w", err)
	}
	return nil
}

// LongestWait is the longest one call of a [Redis] store built from o
// blocks: its Timeout, zero meaning [DefaultRedisTimeout]. A server's
// request timeouts must not be shorter.
func (o RedisOptions) LongestWait() time.Duration {
	return cmp.Or(o.Timeout, DefaultRedisTimeout)
}

// NewRedis returns a Redis store. It does not connect: the first Use (or
// [Redis.Ping]) does. It refuses what [CheckRedisOptions] refuses.
func NewRedis(opts RedisOptions) (*Redis, error) {
	if err := CheckRedisOptions(opts); err != nil {
		return nil, err
	}
	o, _ := redis.ParseURL(opts.URL) // checked above
	t := opts.LongestWait()
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = t, t, t, t
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1 // see the type's comment
	if opts.PoolSize > 0 {
		o.PoolSize = opts.PoolSize
	}
	prefix := opts.KeyPrefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	return &Redis{c: redis.NewClient(o), prefix: prefix, timeout: t}, nil
}

// Use implements dpop.ReplayStore with SET prefix+hex(key) 1 NX PX ttl.
func (r *Redis) Use(ctx context.Context, key [32]byte, ttl time.Duration, _ time.Time) (bool, error) {
	ms := max(ttl.Milliseconds(), 1)
	if ttl%time.Millisecond != 0 {
		ms++ // round up: never forget a proof early
	}
	// go-redis bounds each phase by Timeout (ContextTimeoutEnabled: and by
	// ctx); a call that waited for a pooled connection would then wait for
	// its answer as long again. One deadline for the call keeps it within
	// Timeout, the bound the HTTP server's timeouts count.
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := r.c.Do(ctx, "SET", r.prefix+hex.EncodeToString(key[:]), "1", "NX", "PX", ms).Result()
	switch {
	case errors.Is(err, redis.Nil):
		r.replayed.Add(1)
		return false, nil
	case err != nil:
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis: %w", err)
	case res != "OK":
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis answered %v to SET NX", res)
	}
	r.fresh.Add(1)
	return true, nil
}

// Ping checks that the server answers.
func (r *Redis) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
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

// Close closes the store's connections.
func (r *Redis) Close() error { return r.c.Close() }
