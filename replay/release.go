package replay

import (
	"context"
	"encoding/hex"
	"fmt"

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
