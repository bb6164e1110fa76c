package redisconn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// evictionCheckEvery is how long one reading of the masters' memory
// settings is trusted: a CONFIG SET of maxmemory-policy is noticed within it.
const evictionCheckEvery = time.Second

// eviction caches the last reading of the masters' eviction settings.
type eviction struct {
	last       atomic.Pointer[evictionReading]
	refreshing atomic.Bool
}

type evictionReading struct {
	at  time.Time
	err error
}

// CheckNoEviction returns [ErrEvicting] (wrapped with the policy) when a
// master the client writes to may evict keys, and the error of the reading
// when the settings cannot be read (INFO memory, on every master of a
// Cluster). A reading is reused for a second: the cost is one INFO per
// second per process, not one per call. It waits for Redis within ctx and
// the client's timeout; while one caller reads again, the others use the
// previous reading.
func (c *Client) CheckNoEviction(ctx context.Context) error {
	last := c.evict.last.Load()
	if last != nil && time.Since(last.at) < evictionCheckEvery {
		return last.err
	}
	if !c.evict.refreshing.CompareAndSwap(false, true) {
		if last != nil {
			return last.err
		}
	} else {
		defer c.evict.refreshing.Store(false)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var err error
	if cc, ok := c.UniversalClient.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		ferr := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			if e := readEviction(ctx, m); e != nil {
				mu.Lock()
				err = e
				mu.Unlock()
			}
			return nil
		})
		if err == nil && ferr != nil {
			err = fmt.Errorf("redisconn: INFO memory: %w", ferr)
		}
	} else {
		err = readEviction(ctx, c.UniversalClient)
	}
	if err != nil && !errors.Is(err, ErrEvicting) {
		// A reading that failed is not remembered: the next call asks again.
		return err
	}
	c.evict.last.Store(&evictionReading{at: time.Now(), err: err})
	return err
}

// readEviction reads maxmemory and maxmemory_policy from INFO memory.
func readEviction(ctx context.Context, c redis.Cmdable) error {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return fmt.Errorf("redisconn: INFO memory: %w", err)
	}
	var maxmemory, policy string
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, _ := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		switch k {
		case "maxmemory":
			maxmemory = v
		case "maxmemory_policy":
			policy = v
		}
	}
	if policy == "" || maxmemory == "" {
		return fmt.Errorf("%w: INFO memory names no maxmemory_policy", ErrEvicting)
	}
	if maxmemory != "0" && policy != "noeviction" {
		return fmt.Errorf("%w: maxmemory %s, maxmemory-policy %s", ErrEvicting, maxmemory, policy)
	}
	return nil
}
