package replay

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Release forgets key, so that its next Use is fresh: a caller that used a
// key and then could not do what the use stood for (store the entries a
// logout token names) gives it back, so that the sender's retry of the
// same token is taken. It never makes a key that another caller used
// fresh again unless that caller is the one releasing it: call it only
// for a key whose Use answered fresh. It is safe for concurrent use.
func (m *Memory) Release(_ context.Context, key [32]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, key) // its queue entry stays, and is skipped when purged
	return nil
}

// Release forgets key with DEL prefix+hex(key) (see [Memory.Release]).
func (r *Redis) Release(ctx context.Context, key [32]byte) error {
	k := r.prefix + hex.EncodeToString(key[:])
	if _, err := r.c.Write(ctx, k, func(p redis.Pipeliner) { p.Del(ctx, k) }); err != nil {
		r.failed.Add(1)
		return fmt.Errorf("replay: redis: %w", err)
	}
	return nil
}

// Used reports whether key is in use at now, without using it: a caller
// that marks a second key once the work behind a first one is done (a
// logout token's entries stored) asks whether another caller finished it.
// It is safe for concurrent use.
func (m *Memory) Used(_ context.Context, key [32]byte, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	exp, ok := m.seen[key]
	return ok && now.Before(exp), nil
}

// Used reports whether key is in use with EXISTS prefix+hex(key), bounded
// by the client's Timeout (see [Memory.Used]). A copy that lags its master
// can answer false for a key just used: callers must take false as "not
// yet", never as "never".
func (r *Redis) Used(ctx context.Context, key [32]byte, _ time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, r.c.Timeout())
	defer cancel()
	n, err := r.c.Exists(ctx, r.prefix+hex.EncodeToString(key[:])).Result()
	if err != nil {
		r.failed.Add(1)
		return false, fmt.Errorf("replay: redis: %w", err)
	}
	return n > 0, nil
}
