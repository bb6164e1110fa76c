package revoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of [RedisOptions].
const (
	DefaultKeyPrefix    = "{jwksverify:revoke}"
	DefaultMaxStaleness = 30 * time.Second
	DefaultRedisTimeout = 500 * time.Millisecond
)

// RedisOptions configure a [Redis] store.
type RedisOptions struct {
	// Client is the Redis client (a *redis.Client, a failover or a cluster
	// client). Required. The store does not close it.
	Client redis.UniversalClient
	// Retention is how long an entry lives. Required (positive).
	Retention time.Duration
	// MaxStaleness is how long the replica's copy may go without being
	// proven whole before [Index.Check] answers [ErrStale] (fail closed).
	// Zero means [DefaultMaxStaleness].
	MaxStaleness time.Duration
	// KeyPrefix starts every key and the channel. It must hold a hash tag
	// ({…}) so that every key of the store is in one slot of a Redis
	// Cluster (the scripts touch several). Empty means [DefaultKeyPrefix].
	KeyPrefix string
	// Timeout bounds each call. Zero means [DefaultRedisTimeout].
	Timeout time.Duration
	// Writer, if set, runs the store's writes (redisconn.Client.Write: on
	// the key's master, then WAIT for the replicas it is configured with;
	// fewer is a failure, [ErrUnavailable]). Nil means Client, the master's
	// answer alone.
	Writer Writer
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Logger receives the follower's connection changes. Nil discards them.
	Logger *slog.Logger
}

// Writer runs the commands queue adds, which touch key (or keys of its
// hash slot), on the master that holds key, and returns them and the first
// failure: redisconn.Client implements it.
type Writer interface {
	Write(ctx context.Context, key string, queue func(redis.Pipeliner)) ([]redis.Cmder, error)
}

// evictionChecker is what redisconn.Client adds: an error when Redis may
// evict keys (maxmemory with an evicting maxmemory-policy).
type evictionChecker interface {
	CheckNoEviction(ctx context.Context, key string) error
}

// checkEviction fails when the client can tell that Redis may evict keys:
// entries Redis forgets silently would be lifted at every replica at its
// next full read, so such a Redis proves nothing (fail closed).
func (r *Redis) checkEviction(ctx context.Context) error {
	if ec, ok := r.c.(evictionChecker); ok {
		return ec.CheckNoEviction(ctx, r.entriesKey) // every key of the store is in its slot
	}
	return nil
}

// Redis is the store every replica shares. Entries are a hash in Redis
// (with a sorted set of their expiries and a version counter), changed only
// by scripts that also bump the version and publish the change. Each
// replica keeps the whole set in its [Index]: the request path never waits
// on Redis. A follower goroutine applies the published changes as they
// come, reads everything again on every (re)connection and on any gap in
// the versions, and checks the version every 0.8s (pollInterval): the copy is proven
// whole when the version it holds is Redis's. A copy not proven whole for
// MaxStaleness is stale: [Index.Check] answers [ErrStale] and the service
// fails closed, until it syncs again (no restart). It is safe for
// concurrent use; Close stops the follower and waits for it.
type Redis struct {
	opts                                   RedisOptions
	c                                      redis.UniversalClient
	idx                                    *Index
	entriesKey, expiryKey, versionKey, chn string
	counts                                 counts

	mu      sync.Mutex // applied, and the order of applying changes
	applied int64      // the version the copy holds
	// behind is set when a change of a version the copy already holds
	// is not in the copy: Redis's versions went back (a failover lost a
	// write) and are reused; the next poll reads everything again.
	behind atomic.Bool

	cancel context.CancelFunc
	done   chan struct{}
}

// The scripts. KEYS: entries, expiry, version. Each change bumps the
// version and publishes "<version> <op> <payload>" so that followers see
// gaps. Entries expired for more than a retention (ARGV[4], milliseconds)
// are dropped from Redis as changes come (a bounded number at a time), by
// Redis's clock: one writer's clock running ahead must not erase entries
// live for every other replica. TIME before a write needs the script
// replicated by its effects: Redis 7's only mode, 5 and 6's default, asked
// for explicitly where the call exists (a server set to
// lua-replicate-commands no). Every replica already ignores expired
// entries by their expiry.
const (
	addSource = `
if redis.replicate_commands then redis.replicate_commands() end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
local t = redis.call('TIME')
local cut = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(ARGV[4])
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', cut, 'LIMIT', 0, 100)
for _, id in ipairs(old) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
end
local v = redis.call('INCR', KEYS[3])
redis.call('PUBLISH', ARGV[5], v .. ' a ' .. ARGV[2])
return v`
	deleteSource = `
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
local v = redis.call('INCR', KEYS[3])
redis.call('PUBLISH', ARGV[2], v .. ' d ' .. ARGV[1])
return v`
)

var snapshotScript = redis.NewScript(`
return {redis.call('GET', KEYS[3]) or '0', redis.call('HGETALL', KEYS[1])}`)

// write runs the script src (a change) with args and returns its answer:
// through the Writer when there is one (EVAL: a pipeline cannot fall back
// from EVALSHA), else on the client.
func (r *Redis) write(ctx context.Context, src string, args ...any) (int64, error) {
	if err := r.checkEviction(ctx); err != nil {
		return 0, err
	}
	keys := r.keys()
	if r.opts.Writer == nil {
		return r.c.Eval(ctx, src, keys, args...).Int64()
	}
	var cmd *redis.Cmd
	if _, err := r.opts.Writer.Write(ctx, keys[0], func(p redis.Pipeliner) { cmd = p.Eval(ctx, src, keys, args...) }); err != nil {
		return 0, err
	}
	return cmd.Int64()
}

// NewRedis returns the store and starts its follower, which connects in
// the background: until its first full read the copy is stale.
func NewRedis(o RedisOptions) (*Redis, error) {
	switch {
	case o.Client == nil:
		return nil, errors.New("revoke: the redis store needs a client")
	case o.Retention <= 0:
		return nil, errors.New("revoke: retention must be positive")
	case o.MaxStaleness < 0:
		return nil, errors.New("revoke: max_staleness must not be negative")
	}
	if o.MaxStaleness == 0 {
		o.MaxStaleness = DefaultMaxStaleness
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultRedisTimeout
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if i := strings.IndexByte(o.KeyPrefix, '{'); i < 0 || !strings.Contains(o.KeyPrefix[i:], "}") {
		return nil, errors.New("revoke: the key prefix needs a {hash tag}")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Redis{
		opts: o, c: o.Client, idx: NewIndex(o.MaxStaleness),
		entriesKey: o.KeyPrefix + ":entries", expiryKey: o.KeyPrefix + ":expiry",
		versionKey: o.KeyPrefix + ":version", chn: o.KeyPrefix + ":changes",
		cancel: cancel, done: make(chan struct{}),
	}
	// The copy holds what Redis holds (writers prune an entry one
	// retention past its expiry): a clock stepped ahead and back must not
	// sweep from it what a poll, finding the versions equal, then proves
	// whole without reading it again.
	r.idx.keep = o.Retention
	go r.follow(ctx)
	return r, nil
}

// Index returns the index the request path checks.
func (r *Redis) Index() *Index { return r.idx }

// Retention returns how long an entry lives: a token that lives longer
// outlives the entries that name it.
func (r *Redis) Retention() time.Duration { return r.opts.Retention }

func (r *Redis) keys() []string { return []string{r.entriesKey, r.expiryKey, r.versionKey} }

// Add stores e ([Check] refuses what it refuses, wrapping [ErrInvalid]) and
// returns once Redis has it (and AcknowledgeReplicas replicas, when set).
// This replica's copy has it when Add returns; the others within a
// moment. A Redis failure wraps [ErrUnavailable]: nothing was acknowledged
// (the entry may still have been stored, and then applies everywhere).
func (r *Redis) Add(ctx context.Context, e Entry) (Entry, error) {
	if err := Check(e); err != nil {
		return Entry{}, err
	}
	now := r.opts.Now()
	e = stamp(e, now, r.opts.Retention)
	b, err := json.Marshal(e)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	v, err := r.write(ctx, addSource, e.ID, b, e.ExpiresAt.UnixMilli(), r.opts.Retention.Milliseconds(), r.chn)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	r.apply(v, func() { r.idx.Put(e, now) }, func() bool {
		_, ok := r.idx.Get(e.ID, now)
		return ok
	})
	r.counts.add(e)
	return e, nil
}

// Delete lifts the entry id everywhere: [ErrNotFound] when Redis has no
// such entry.
func (r *Redis) Delete(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	v, err := r.write(ctx, deleteSource, id, r.chn)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if v == 0 {
		return ErrNotFound
	}
	r.apply(v, func() { r.idx.Remove(id) }, func() bool {
		_, ok := r.idx.Get(id, r.opts.Now())
		return !ok
	})
	return nil
}

// List returns the live entries of issuer ("" every issuer) of this
// replica's copy, oldest first. A stale copy is [ErrUnavailable].
func (r *Redis) List(ctx context.Context, issuer string) ([]Entry, error) {
	now := r.opts.Now()
	if r.idx.Stale(now) {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, ErrStale)
	}
	return r.idx.List(issuer, now), nil
}

// Added returns the number of entries added through this replica, per
// issuer, source and kind.
func (r *Redis) Added() map[Added]uint64 { return r.counts.snapshot() }

// Close stops the follower and waits for it. The client stays open.
func (r *Redis) Close() error {
	r.cancel()
	<-r.done
	return nil
}

// apply runs change, of version v, unless the copy holds v already; the
// version moves on only when v is the next one (a gap is closed by the
// follower's next full read). A version the copy holds whose change is
// not in it (in reports whether it is) means Redis's versions went back
// and v is reused: the change is applied all the same (an entry Redis
// acknowledged is enforced here at once) and the next poll reads
// everything again.
func (r *Redis) apply(v int64, change func(), in func() bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v <= r.applied {
		if !in() {
			change()
			r.behind.Store(true)
		}
		return
	}
	change()
	if v == r.applied+1 {
		r.applied = v
	}
}

// pollInterval is how often the follower compares its version with
// Redis's: the copy is proven whole at most this long after a change.
// A MaxStaleness below twice it polls more often ([Redis.pollEvery]).
// With behindRecheck it bounds how late a change whose message was lost is
// enforced (SPEC: within 1 s): the first poll after it finds the copy
// behind, the recheck reads everything again.
const pollInterval = 800 * time.Millisecond

// behindRecheck is how soon the follower polls again after finding its
// copy behind Redis: long enough for a change's message on its way (sent
// with the change) to arrive, so that one is not read as lost; a message
// still missing then was lost, and everything is read again.
const behindRecheck = 100 * time.Millisecond

// minPollInterval bounds how often the follower polls, whatever the
// MaxStaleness.
const minPollInterval = 10 * time.Millisecond

// pollEvery is the follower's poll interval: pollInterval, or half the
// MaxStaleness when that is shorter. Each proof comes a poll interval plus
// the poll's round trips after the last, so with a MaxStaleness of 1s (the
// configuration's least) a one-second poll left a copy over a healthy
// Redis older than its MaxStaleness for a moment every second: a share of
// the requests answered 503 and /readyz flapping.
func (r *Redis) pollEvery() time.Duration {
	return max(min(pollInterval, r.opts.MaxStaleness/2), minPollInterval)
}

// follow keeps the copy: subscribe, read everything, apply changes, poll
// the version; on any failure start again after a pause.
func (r *Redis) follow(ctx context.Context) {
	defer close(r.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		synced := r.idx.SyncedAt()
		err := r.session(ctx)
		if ctx.Err() != nil {
			return
		}
		// One warning per outage: a session that synced since the last
		// one ended is news, the failed reconnections after it are not.
		level := slog.LevelDebug
		if r.idx.SyncedAt() != synced || synced.IsZero() && backoff == 100*time.Millisecond {
			level, backoff = slog.LevelWarn, 100*time.Millisecond
		}
		r.opts.Logger.Log(ctx, level, "revocations: lost Redis, reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// session is one subscription: it returns why it ended.
func (r *Redis) session(ctx context.Context) error {
	ps := r.c.Subscribe(ctx, r.chn)
	defer ps.Close()
	// The subscription is confirmed before the full read, so that no
	// change published after the read is missed.
	for {
		rctx, cancel := context.WithTimeout(ctx, r.followTimeout())
		msg, err := ps.Receive(rctx)
		cancel()
		if err != nil {
			return err
		}
		if _, ok := msg.(*redis.Subscription); ok {
			break
		}
	}
	if err := r.reread(ctx); err != nil {
		return err
	}
	r.opts.Logger.Info("revocations: synced with Redis", "entries", r.idx.Len())
	nextPoll := time.Now().Add(r.pollEvery())
	behind := false
	// pongDue is when the oldest PING sent on the subscription and not yet
	// answered should have been (zero: none awaits its PONG).
	var pongDue time.Time
	for {
		wait := time.Until(nextPoll)
		if wait > 0 {
			msg, err := ps.ReceiveTimeout(ctx, wait)
			if err == nil {
				switch m := msg.(type) {
				case *redis.Message:
					if err := r.onMessage(ctx, m.Payload); err != nil {
						return err
					}
				case *redis.Pong:
					pongDue = time.Time{}
				}
				continue
			}
			if !isTimeout(err) {
				return err
			}
			// Nothing came while listening: a PING long unanswered means
			// the subscription hears nothing (half open: the server's
			// host gone, a flow a middlebox dropped). Its writes succeed
			// until TCP gives up, minutes later, while every change
			// would be learned only by the poll's full reads.
			if !pongDue.IsZero() && time.Now().After(pongDue) {
				return errors.New("revoke: the subscription answered no PING")
			}
		}
		nextPoll = time.Now().Add(r.pollEvery())
		if err := ps.Ping(ctx); err != nil {
			return err
		}
		if pongDue.IsZero() {
			pongDue = time.Now().Add(r.followTimeout())
		}
		var err error
		if behind, err = r.poll(ctx, behind); err != nil {
			return err
		}
		if behind {
			nextPoll = time.Now().Add(min(behindRecheck, r.pollEvery()))
		}
	}
}

// followTimeout bounds the follower's calls: off the request path, so
// longer than Timeout, that a busy moment does not cost a reconnection and
// a full read.
func (r *Redis) followTimeout() time.Duration { return max(r.opts.Timeout, 2*time.Second) }

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// changeScript reads, atomically, what a published change is checked
// against: Redis's version and the stored entry of ARGV[1] (empty when
// absent; a stored entry is never empty).
var changeScript = redis.NewScript(`
return {redis.call('GET', KEYS[3]) or '0', redis.call('HGET', KEYS[1], ARGV[1]) or ''}`)

// onMessage applies one published change; a gap to a version Redis has
// handed out reads everything again at once, a message that does not
// decode at the next poll.
//
// A message only says which entry changed: its payload is never the
// change. Pub/sub ignores database numbers, and ACL key patterns do not
// restrict channels, so a client that cannot touch one key of the store
// (another application on the server, another database) may publish on
// its channel; a forged "lift" applied as sent took an acknowledged
// revocation out of every replica's copy. The entry is read from Redis
// (its keys are the store's), with the version, in one script: a message
// of a version Redis has not handed out is not Redis's and is ignored
// (the poll proves the copy whole against Redis's version).
func (r *Redis) onMessage(ctx context.Context, payload string) error {
	vs, rest, _ := strings.Cut(payload, " ")
	op, arg, _ := strings.Cut(rest, " ")
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return r.undecodable()
	}
	r.mu.Lock()
	next := v == r.applied+1
	old := v <= r.applied
	r.mu.Unlock()
	if old {
		// A change the copy's version already covers. Missing from the
		// copy, it may be a version Redis handed out again (a failover
		// lost the write that had it): the next poll reads everything.
		// It is never applied here: a later change of this replica may
		// have superseded it (an Add's echo arriving after its Delete).
		if r.oldChangeMissing(op, arg) {
			r.behind.Store(true)
		}
		return nil
	}
	if !next {
		// A gap: a change lost on its way, or a message that is not
		// Redis's. Only a version Redis has handed out is worth reading
		// everything again: anyone who can publish on the channel would
		// otherwise have every replica read the whole store (a script
		// that blocks Redis) once per message.
		return r.gap(ctx, v)
	}
	var id string
	switch op {
	case "a":
		var e Entry
		if json.Unmarshal([]byte(arg), &e) != nil {
			return r.undecodable()
		}
		id = e.ID
	case "d":
		id = arg
	default:
		return r.undecodable()
	}
	rctx, cancel := context.WithTimeout(ctx, r.followTimeout())
	defer cancel()
	res, err := changeScript.Run(rctx, r.c, r.keys(), id).Slice()
	if err != nil {
		return err
	}
	if len(res) != 2 {
		return errors.New("revoke: unexpected change")
	}
	rvs, _ := res[0].(string)
	rv, err := strconv.ParseInt(rvs, 10, 64)
	if err != nil {
		return fmt.Errorf("revoke: version %q", rvs)
	}
	if rv < v {
		return nil // not a version Redis handed out: not Redis's message
	}
	// What Redis holds now decides: the entry stored (a later change may
	// have replaced it), or none (lifted, then or since). A reply that is
	// not a string is not the script's: read as none, it lifted the entry.
	stored, ok := res[1].(string)
	if !ok {
		return fmt.Errorf("revoke: unexpected change reply %T", res[1])
	}
	var e Entry
	have := stored != "" && json.Unmarshal([]byte(stored), &e) == nil && e.ID == id
	now := r.opts.Now()
	if have {
		e = atLeastRetention(e, r.opts.Retention)
		r.apply(v, func() { r.idx.Put(e, now) }, func() bool {
			_, ok := r.idx.Get(e.ID, now)
			return ok
		})
		return nil
	}
	r.apply(v, func() { r.idx.Remove(id) }, func() bool {
		_, ok := r.idx.Get(id, now)
		return !ok
	})
	return nil
}

// gap handles a message of version v past the next one: everything is read
// again when Redis has handed v out, else the message is not Redis's and
// is ignored (the poll proves the copy whole against Redis's version).
func (r *Redis) gap(ctx context.Context, v int64) error {
	rctx, cancel := context.WithTimeout(ctx, r.followTimeout())
	defer cancel()
	rv, err := r.version(rctx)
	if err != nil {
		return err
	}
	if rv < v {
		return nil
	}
	return r.reread(ctx)
}

// version reads Redis's version of the store (0 before its first change).
func (r *Redis) version(ctx context.Context) (int64, error) {
	s, err := r.c.Get(ctx, r.versionKey).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("revoke: version %q", s)
	}
	return v, nil
}

// undecodable handles a message that does not decode: not one of Redis's
// (or of another version of this store), so the copy is read again at the
// next poll, not at once: at most one full read a poll interval, whoever
// publishes on the channel.
func (r *Redis) undecodable() error {
	r.behind.Store(true)
	return nil
}

// oldChangeMissing reports whether the change op arg of a version the
// copy holds is not in the copy: an added entry absent, a deleted one
// present.
func (r *Redis) oldChangeMissing(op, arg string) bool {
	now := r.opts.Now()
	switch op {
	case "a":
		var e Entry
		if json.Unmarshal([]byte(arg), &e) != nil {
			return true
		}
		e = atLeastRetention(e, r.opts.Retention)
		_, ok := r.idx.Get(e.ID, now)
		return !ok && now.Before(e.ExpiresAt)
	case "d":
		_, ok := r.idx.Get(arg, now)
		return ok
	}
	return false
}

// poll compares the copy's version with Redis's. Equal proves the copy
// whole as of the poll's start. Behind twice in a row (a change lost, not
// just on its way) reads everything again. It reports whether the copy
// is behind.
func (r *Redis) poll(ctx context.Context, wasBehind bool) (bool, error) {
	start := r.opts.Now()
	ctx, cancel := context.WithTimeout(ctx, r.followTimeout())
	defer cancel()
	if err := r.checkEviction(ctx); err != nil {
		return wasBehind, err
	}
	v, err := r.version(ctx)
	if err != nil {
		return wasBehind, err
	}
	r.mu.Lock()
	applied := r.applied
	r.mu.Unlock()
	if r.behind.Load() {
		// A reused version: equal numbers prove nothing.
		return false, r.reread(ctx)
	}
	switch {
	case v == applied:
		r.idx.Synced(start)
		return false, nil
	case v < applied:
		// Redis went back (restored, or emptied): take what it has.
		return false, r.reread(ctx)
	case wasBehind:
		return false, r.reread(ctx)
	}
	return true, nil
}

// reread replaces the copy with everything Redis has, atomically read.
func (r *Redis) reread(ctx context.Context) error {
	start := r.opts.Now()
	ctx, cancel := context.WithTimeout(ctx, max(r.opts.Timeout, 10*time.Second))
	defer cancel()
	if err := r.checkEviction(ctx); err != nil {
		return err
	}
	res, err := snapshotScript.Run(ctx, r.c, r.keys()).Slice()
	if err != nil {
		return err
	}
	if len(res) != 2 {
		return errors.New("revoke: unexpected snapshot")
	}
	vs, _ := res[0].(string)
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return fmt.Errorf("revoke: version %q", vs)
	}
	// A reply not of the script's shape is a failed read: read as no
	// entries, it emptied the copy, which was then proven whole.
	kv, ok := res[1].([]any)
	if !ok || len(kv)%2 != 0 {
		return fmt.Errorf("revoke: unexpected snapshot reply %T", res[1])
	}
	es := make([]Entry, 0, len(kv)/2)
	for i := 1; i < len(kv); i += 2 {
		s, ok := kv[i].(string)
		if !ok {
			return fmt.Errorf("revoke: unexpected snapshot entry %T", kv[i])
		}
		var e Entry
		if json.Unmarshal([]byte(s), &e) == nil {
			es = append(es, atLeastRetention(e, r.opts.Retention))
		}
	}
	r.mu.Lock()
	r.idx.Replace(es, r.opts.Now())
	r.applied = v
	r.behind.Store(false)
	r.mu.Unlock()
	r.idx.Synced(start)
	return nil
}
