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

// eviction caches the last reading of each master's eviction settings
// (by its address; "" for the one master of a standalone or Sentinel
// client).
type eviction struct {
	masters sync.Map // string → *masterEviction
}

// masterEviction is one master's last reading.
type masterEviction struct {
	last       atomic.Pointer[evictionReading]
	refreshing atomic.Bool
}

type evictionReading struct {
	at  time.Time
	err error
}

// CheckNoEviction returns [ErrEvicting] (wrapped with the policy) when the
// master the client writes key to may evict keys, and the error of the
// reading when its settings cannot be read (INFO memory; in a Cluster, on
// the master of key's slot only: a master that is down fails the keys it
// holds, not every other master's too). A reading is reused for a second:
// the cost is one INFO per second per master and process, not one per
// call. It waits for Redis within ctx and the client's timeout; while one
// caller reads again, the others use the previous reading. Each call it
// refuses with [ErrEvicting] counts in [Stats].Errors, as a failed command
// does: the request behind it is answered 503 all the same, and the
// Redis-failing alert must see it.
func (c *Client) CheckNoEviction(ctx context.Context, key string) error {
	err := c.checkNoEviction(ctx, key)
	if errors.Is(err, ErrEvicting) {
		c.failed.Add(1)
	}
	return err
}

func (c *Client) checkNoEviction(ctx context.Context, key string) error {
	var m redis.Cmdable = c.UniversalClient
	addr := ""
	if cc, ok := c.UniversalClient.(*redis.ClusterClient); ok {
		mctx, cancel := context.WithTimeout(ctx, c.timeout)
		mc, err := cc.MasterForKey(mctx, key)
		cancel()
		if err != nil {
			return fmt.Errorf("redisconn: INFO memory: %w", err)
		}
		m, addr = mc, mc.Options().Addr
	}
	// A reading within the second costs a map load and an atomic load:
	// no context, no allocation (this runs before every DPoP proof's
	// write).
	ev := c.evict.master(addr)
	last := ev.last.Load()
	if last != nil && time.Since(last.at) < evictionCheckEvery {
		return last.err
	}
	if !ev.refreshing.CompareAndSwap(false, true) {
		if last != nil {
			return last.err
		}
	} else {
		defer ev.refreshing.Store(false)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err := readEviction(ctx, m)
	if err != nil && !errors.Is(err, ErrEvicting) {
		// A reading that failed is not remembered: the next call asks again.
		return err
	}
	ev.last.Store(&evictionReading{at: time.Now(), err: err})
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

// master returns the readings of the master at addr ("" outside a
// Cluster), made on first use.
func (e *eviction) master(addr string) *masterEviction {
	if v, ok := e.masters.Load(addr); ok {
		return v.(*masterEviction)
	}
	v, _ := e.masters.LoadOrStore(addr, &masterEviction{})
	return v.(*masterEviction)
}
