package redisconn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/redisconn"
)

// TestEvictionRefusalsCountAsErrors: every call CheckNoEviction refuses
// because Redis may evict keys counts in Stats().Errors, the
// jwksverify_redis_errors_total behind the JWKSVerifyRedisFailing alert.
// They were not counted (INFO itself succeeds): a Redis switched to
// allkeys-lru answered every DPoP request 503 and the Redis alert stayed
// quiet. A Redis that keeps its keys counts nothing.
func TestEvictionRefusalsCountAsErrors(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantErrors uint64 // after three calls
	}{
		{"allkeys-lru", []string{"--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"}, 3},
		{"volatile-lru", []string{"--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"}, 3},
		{"noeviction", []string{"--maxmemory", "64mb", "--maxmemory-policy", "noeviction"}, 0},
		{"no-maxmemory", []string{"--maxmemory-policy", "allkeys-lru"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t, tt.args...)
			c := newClient(t, redisconn.Options{URL: srv.URL(), Timeout: 2 * time.Second})
			ctx := context.Background()
			// A connection first: only the checks are counted below.
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			base := c.Stats().Errors
			// The first call reads INFO; the others reuse its reading.
			for i := range 3 {
				err := c.CheckNoEviction(ctx, "k")
				if evicting := tt.wantErrors > 0; errors.Is(err, redisconn.ErrEvicting) != evicting || (!evicting && err != nil) {
					t.Fatalf("call %d: CheckNoEviction() = %v, want ErrEvicting %v", i, err, evicting)
				}
			}
			if got := c.Stats().Errors - base; got != tt.wantErrors {
				t.Errorf("Stats().Errors rose by %d over three calls, want %d", got, tt.wantErrors)
			}
		})
	}
}

// TestHealthyConnectionCountsNoError: connecting to a healthy Redis counts
// no error (go-redis's CLIENT MAINT_NOTIFICATIONS probe, which a Redis
// before 8 refuses, is not a failed call: no request is behind it and the
// connection serves), while a command Redis refuses still counts one.
func TestHealthyConnectionCountsNoError(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, redisconn.Options{URL: srv.URL(), Timeout: 2 * time.Second})
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := c.Stats().Errors; got != 0 {
		t.Errorf("Stats().Errors = %d after connecting to a healthy Redis, want 0", got)
	}
	if err := c.Do(ctx, "CLIENT", "NO-SUCH-SUBCOMMAND").Err(); err == nil {
		t.Fatal("CLIENT NO-SUCH-SUBCOMMAND succeeded")
	}
	if got := c.Stats().Errors; got != 1 {
		t.Errorf("Stats().Errors = %d after a refused command, want 1", got)
	}
}
