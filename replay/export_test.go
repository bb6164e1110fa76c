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
