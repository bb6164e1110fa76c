package replay_test

import (
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/replay"
)

// TestSameRedis: a reload keeps the Redis client only for equal options.
func TestSameRedis(t *testing.T) {
	base := replay.RedisOptions{URL: "redis://127.0.0.1:6379", Timeout: 100 * time.Millisecond}
	tests := []struct {
		name   string
		change func(*replay.RedisOptions)
		want   bool
	}{
		{"equal", func(*replay.RedisOptions) {}, true},
		{"url", func(o *replay.RedisOptions) { o.URL = "redis://127.0.0.1:6380" }, false},
		{"timeout", func(o *replay.RedisOptions) { o.Timeout = time.Second }, false},
		{"pool-size", func(o *replay.RedisOptions) { o.PoolSize = 3 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := base
			tt.change(&b)
			if got := replay.SameRedis(base, b); got != tt.want {
				t.Errorf("SameRedis() = %t, want %t", got, tt.want)
			}
		})
	}
}
