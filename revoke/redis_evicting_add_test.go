package revoke_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/revoke"
)

// TestRedisEvictingPolicyAcknowledgesNoRevocation: on a Redis whose
// policy may evict (maxmemory with allkeys-lru), Add answers unavailable
// and writes nothing: an acknowledged revocation must not be one Redis
// may forget (DECISIONS "An evicting Redis is checked").
func TestRedisEvictingPolicyAcknowledgesNoRevocation(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
	st, c := newURLStore(t, srv.URL(), 2*time.Second)
	ctx := context.Background()
	if e, err := st.Add(ctx, revoke.Entry{Issuer: "https://a/", Kind: revoke.KindJTI, Value: "j1", Source: revoke.SourceAdmin}); !errors.Is(err, revoke.ErrUnavailable) {
		t.Errorf("Add() on an evicting Redis = %+v, %v; want ErrUnavailable", e, err)
	}
	if n, err := c.Exists(ctx, "{jwksverify:revoke}:entries").Result(); err != nil || n != 0 {
		t.Errorf("the entries key exists (%d, %v): a refused Add wrote it", n, err)
	}
}
