package replay

import (
	"context"
	"time"
)

// UseAs is Use writing value: a test sends one use twice, as a client that
// lost the reply does.
func (r *Redis) UseAs(ctx context.Context, key [32]byte, ttl time.Duration, value string) (bool, error) {
	return r.use(ctx, key, ttl, value)
}

// Queues returns how many queues m holds.
func (m *Memory) Queues() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queues)
}

// MaxQueues is the bound of [Memory.Queues].
const MaxQueues = maxQueues
