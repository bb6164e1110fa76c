package redisconn

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

// infoOnly is a redis.Cmdable whose INFO answers info, or fails with err.
type infoOnly struct {
	redis.Cmdable // nil: any other command panics
	info          string
	err           error
}

func (f infoOnly) Info(context.Context, ...string) *redis.StringCmd {
	return redis.NewStringResult(f.info, f.err)
}

// TestReadEviction: a master is refused (ErrEvicting) when it may evict:
// maxmemory set with a policy other than noeviction, or an INFO memory
// that names no maxmemory or no policy; maxmemory 0 never evicts, whatever
// the policy. An INFO that fails is an error, not ErrEvicting.
func TestReadEviction(t *testing.T) {
	tests := []struct {
		name     string
		info     string
		err      error
		evicting bool
		fails    bool
	}{
		{"unbounded-noeviction", "# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n", nil, false, false},
		{"unbounded-lru", "# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\n", nil, false, false},
		{"bounded-noeviction", "# Memory\r\nmaxmemory:1048576\r\nmaxmemory_policy:noeviction\r\n", nil, false, false},
		{"bounded-lru", "# Memory\r\nmaxmemory:1048576\r\nmaxmemory_policy:allkeys-lru\r\n", nil, true, true},
		{"no-maxmemory", "# Memory\r\nmaxmemory_policy:noeviction\r\n", nil, true, true},
		{"no-policy", "# Memory\r\nmaxmemory:0\r\n", nil, true, true},
		{"empty", "", nil, true, true},
		{"info-fails", "", errors.New("connection refused"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := readEviction(context.Background(), infoOnly{info: tt.info, err: tt.err})
			if errors.Is(err, ErrEvicting) != tt.evicting || (err != nil) != tt.fails {
				t.Errorf("readEviction() = %v, want evicting %v, failing %v", err, tt.evicting, tt.fails)
			}
		})
	}
}
