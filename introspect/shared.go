package introspect

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jwksverify/jwksverify/internal/fileread"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/verify"
)

// The shared cache (Options.SharedCache) keeps each answer in Redis under
//
//	jwksverify:introspect:{MAC}        the answer, expiring at its stale end
//	jwksverify:introspect:{MAC}:lock   held by the replica calling upstream
//
// where MAC is the hex of the first 128 bits of HMAC-SHA256 under the
// shared key of the settings the answer depends on (the issuer, the
// configured endpoint, the client asking, the cache's lifetimes: see scope) and
// the token: never the token, nor a hash anyone could compute from it. A
// reload that changes one of them (introspect.Same false) starts from an
// empty cache, as a Client of its own does: the old endpoint's or client's
// answers, or one kept for a longer max_ttl, never answer for it. The
// braces are a hash tag: both keys of a token are in one slot of a Redis
// Cluster, as the script that stores the answer and releases the lock
// needs.
//
// The value is the entry (see shared.encode) with a MAC under a key derived
// from the shared key, over the Redis key and the entry: whoever can write
// the Redis but does not hold the key file can neither edit an answer nor
// move one under another token's key (a miss: the flight asks upstream and
// stores it again). It is read with GETRANGE, at most its bound.
//
// A replica that finds no fresh answer takes the lock (SET NX PX) and calls
// upstream; the others, on every replica, poll the answer until it appears
// (or the lock is gone: then one of them takes it), within the flight's
// budget (Timeout + MaxWait). So N replicas asking about one token make one
// upstream call per cache lifetime, for inactive answers too.
const (
	sharedPrefix = "jwksverify:introspect:"
	// MinSharedKeyBytes is the shortest key of Options.SharedKeyFile.
	MinSharedKeyBytes = 32
	// maxSharedKeyBytes bounds the key file.
	maxSharedKeyBytes = 4096
	// sharedVersion starts every stored answer: a change of the encoding
	// changes it, and an answer of another version is a miss.
	sharedVersion = 2
	// sharedHeader is the version, the active flag, the fresh and stale
	// ends (Unix milliseconds) and the entry's MAC (sharedTag bytes).
	sharedHeader = 1 + 1 + 8 + 8 + sharedTag
	// sharedTag is the length of an entry's MAC (128 bits).
	sharedTag = 16
	// entryLabel derives the key of the entries' MAC from the shared key.
	// Its first 8 bytes, read as the length of an issuer, are far beyond
	// any: no key name's MAC input (scope) begins with it.
	entryLabel = "jwksverify:introspect:entry-mac"
	// The first and the longest pause of a replica polling for another's
	// answer.
	firstPoll, maxPoll = 10 * time.Millisecond, 100 * time.Millisecond
)

// storeScript stores an answer (PX: until its stale end) and releases the
// lock when this flight still holds it. KEYS: answer, lock (one hash tag).
var storeScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
return 1`)

// releaseScript releases the lock when this flight still holds it (its
// call failed: another replica may try at once).
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// dropScript deletes the stored answer (the endpoint has answered since,
// with an answer that is not stored) and releases the lock when this
// flight still holds it. KEYS: answer, lock (one hash tag).
var dropScript = redis.NewScript(`
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1`)

// shared is a Client's Redis cache.
type shared struct {
	rc  *redisconn.Client
	mac []byte // the HMAC key
	// entryMAC is the key of the entries' MAC, derived from mac.
	entryMAC []byte
	// maxClaims bounds the claims of an entry (Options.MaxAnswerBytes),
	// stored and read.
	maxClaims int64
	// scope is what a token's MAC covers besides the token (scope).
	scope []byte
	// lockTTL outlives the holder's flight: a replica that dies holding
	// the lock blocks the others for at most this long.
	lockTTL time.Duration
	budget  time.Duration // of one flight: MaxWait + Timeout

	errs, waits atomic.Uint64
}

func newShared(o Options) (*shared, error) {
	if o.Redis == nil {
		return nil, invalidOption("Redis", "nil, and SharedCache is on")
	}
	key, err := readKey(o.SharedKeyFile)
	if err != nil {
		return nil, invalidOption("SharedKeyFile", "%w", err)
	}
	budget := o.MaxWait + o.Timeout
	m := hmac.New(sha256.New, key)
	m.Write([]byte(entryLabel))
	return &shared{rc: o.Redis, mac: key, entryMAC: m.Sum(nil), maxClaims: o.MaxAnswerBytes,
		scope: scope(o), lockTTL: budget + time.Second, budget: budget}, nil
}

// scope is the settings of o an answer depends on, each length-prefixed:
// the issuer, the endpoint (its URL; "" for a discovered one: the issuer
// publishes it, and a replica that has not read it yet, or reads another
// one, is answered by the same issuer's answers), the client that asks (an authorization server may answer each
// client otherwise: inactive for a client the token is not meant for), and
// the lifetimes stored with the answer (max_ttl, negative_ttl, stale_for).
func scope(o Options) []byte {
	var b []byte
	for _, s := range []string{o.Issuer, o.URL, o.ClientID,
		o.MaxTTL.String(), o.NegativeTTL.String(), o.StaleFor.String()} {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// readKey reads a shared key file: raw bytes, at least MinSharedKeyBytes.
func readKey(path string) ([]byte, error) {
	b, _, err := fileread.Regular(path, maxSharedKeyBytes)
	switch {
	case err != nil:
		return nil, err
	case len(b) < MinSharedKeyBytes:
		return nil, fmt.Errorf("%s holds %d bytes; the key must be at least %d (openssl rand 32 > FILE)", path, len(b), MinSharedKeyBytes)
	}
	return b, nil
}

// key returns the Redis key of token's answer.
func (s *shared) key(token string) string {
	m := hmac.New(sha256.New, s.mac)
	m.Write(s.scope)
	m.Write([]byte(token))
	var sum [sha256.Size]byte
	tag := m.Sum(sum[:0])[:16]
	return sharedPrefix + "{" + hex.EncodeToString(tag) + "}"
}

// get returns the stored answer of key, nil when there is none (or one
// this version cannot read, one over the bound, one whose MAC is not the
// replicas'), within the Redis client's Timeout. At most the bound and one
// byte are read (GETRANGE): a longer value is not an entry.
func (s *shared) get(ctx context.Context, key string) (*entry, error) {
	ctx, cancel := context.WithTimeout(ctx, s.rc.Timeout())
	defer cancel()
	// GETRANGE of a missing key is "", which is no entry either.
	b, err := s.rc.GetRange(ctx, key, 0, sharedHeader+s.maxClaims).Bytes()
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > sharedHeader+s.maxClaims {
		return nil, nil
	}
	return s.decode(key, b), nil
}

// tag is the MAC of an entry stored under key: b without its tag bytes.
func (s *shared) tag(key string, b []byte) []byte {
	m := hmac.New(sha256.New, s.entryMAC)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(key)))
	m.Write(n[:])
	m.Write([]byte(key))
	m.Write(b[:sharedHeader-sharedTag])
	m.Write(b[sharedHeader:])
	return m.Sum(nil)[:sharedTag]
}

// encode is an entry as stored under key: the header, its MAC, then the
// claims of an active answer.
func (s *shared) encode(key string, e *entry) []byte {
	b := make([]byte, sharedHeader, sharedHeader+len(e.claims()))
	b[0] = sharedVersion
	if e.ans != nil {
		b[1] = 1
	}
	binary.BigEndian.PutUint64(b[2:], uint64(e.fresh.UnixMilli()))
	binary.BigEndian.PutUint64(b[10:], uint64(e.stale.UnixMilli()))
	b = append(b, e.claims()...)
	copy(b[sharedHeader-sharedTag:], s.tag(key, b))
	return b
}

// decode reads an entry stored under key; nil for one it cannot read or
// whose MAC is not the replicas' (a miss: the flight asks upstream and
// stores it again).
func (s *shared) decode(key string, b []byte) *entry {
	if len(b) < sharedHeader || b[0] != sharedVersion || b[1] > 1 || (b[1] == 1) == (len(b) == sharedHeader) {
		return nil
	}
	if !hmac.Equal(b[sharedHeader-sharedTag:sharedHeader], s.tag(key, b)) {
		return nil
	}
	e := &entry{
		fresh: time.UnixMilli(int64(binary.BigEndian.Uint64(b[2:]))),
		stale: time.UnixMilli(int64(binary.BigEndian.Uint64(b[10:]))),
	}
	if b[1] == 1 {
		// The verifier checks the claims again (a JSON object in UTF-8).
		e.ans = &verify.Introspection{Claims: b[sharedHeader:]}
	}
	return e
}

// claims are the entry's claims, nil when inactive.
func (e *entry) claims() []byte {
	if e.ans == nil {
		return nil
	}
	return e.ans.Claims
}

// sharedFailed counts a Redis failure of the shared cache and returns its
// error: keys_unavailable.
func (c *Client) sharedFailed(err error) error {
	c.shared.errs.Add(1)
	if ok, n := c.failLog.allow(time.Now()); ok {
		c.log.Warn("introspection shared cache failed", "err", err.Error(), "suppressed", n)
	}
	return fmt.Errorf("%w: %w: %w", verify.ErrKeysUnavailable, ErrShared, err)
}

// runShared is the flight of one token with the shared cache: the answer
// another replica stored meanwhile, else this replica's upstream call under
// the token's lock, else (another replica holds the lock) the answer it
// stores, polled until the flight's budget ends.
func (c *Client) runShared(token string, now time.Time, cl *call) {
	s := c.shared
	ctx, cancel := context.WithTimeout(c.ctx, s.budget)
	defer cancel()
	key := s.key(token)
	lock := key + ":lock"
	var owner [16]byte
	rand.Read(owner[:]) // never fails (crypto/rand)
	holder := hex.EncodeToString(owner[:])
	pause := firstPoll
	for waited := false; ; waited = true {
		e, err := s.get(ctx, key)
		if err != nil {
			cl.err = c.sharedFailed(err)
			return
		}
		if e != nil && now.Before(e.fresh) {
			cl.e = e
			return
		}
		took, err := c.lock(ctx, lock, holder)
		if err != nil {
			cl.err = c.sharedFailed(err)
			return
		}
		if took {
			break
		}
		if !waited {
			s.waits.Add(1)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			// Like a call that found no free slot: a stale answer
			// serves only while the endpoint is known down (Introspect),
			// else keys_unavailable. The lock may have been held all
			// along by a chain of flights each refused at its replica's
			// max_concurrent (a flood), not by a call to a server that
			// does not answer.
			cl.err = fmt.Errorf("%w: %w: another replica's call did not answer within %s", verify.ErrKeysUnavailable, errNoTurn, s.budget)
			return
		}
		pause = min(2*pause, maxPoll)
	}
	// Check again under the lock: the replica that held it may have
	// stored its answer and released it between this flight's GET and SET.
	if e, err := s.get(ctx, key); err != nil || e != nil && now.Before(e.fresh) {
		c.release(lock, holder)
		if err != nil {
			cl.err = c.sharedFailed(err)
		}
		cl.e = e
		return
	}
	e, err := c.call(ctx, token, now)
	if err != nil {
		c.release(lock, holder)
		if ctx.Err() != nil && !errors.Is(err, ErrOverloaded) {
			// The budget, spent waiting for the lock, ended the call:
			// not the endpoint's failure.
			err = fmt.Errorf("%w: %w", errNoTurn, err)
		}
		cl.err = err
		return
	}
	cl.e = e
	c.storeShared(key, lock, holder, e, now)
}

// lock tries to take the token's lock for this flight.
func (c *Client) lock(ctx context.Context, lock, holder string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.shared.rc.Timeout())
	defer cancel()
	return c.shared.rc.SetNX(ctx, lock, holder, c.shared.lockTTL).Result()
}

// release releases the lock when this flight holds it. A failure is only
// counted: the lock expires by itself.
func (c *Client) release(lock, holder string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), c.shared.rc.Timeout())
	defer cancel()
	if err := releaseScript.Run(ctx, c.shared.rc, []string{lock}, holder).Err(); err != nil {
		c.shared.errs.Add(1)
	}
}

// storeShared stores e until its stale end and releases the lock. A
// failure is counted and logged; the answer, the authorization server's,
// still serves this flight's callers (other replicas ask again when the
// lock expires or is gone).
func (c *Client) storeShared(key, lock, holder string, e *entry, now time.Time) {
	ttl := e.stale.Sub(now)
	if e.fresh.After(e.stale) {
		ttl = e.fresh.Sub(now)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), c.shared.rc.Timeout())
	defer cancel()
	if ttl < time.Millisecond || int64(len(e.claims())) > c.shared.maxClaims {
		// Nothing to serve later (exp already past), or claims over what
		// a read takes (the answer's JSON re-encoded, its <, > and &
		// escaped, can outgrow the body's bound): each flight asks. The
		// earlier answer goes too, so that it never serves stale in
		// place of the server's newer word.
		if err := dropScript.Run(ctx, c.shared.rc, []string{key, lock}, holder).Err(); err != nil {
			_ = c.sharedFailed(err)
		}
		return
	}
	if err := storeScript.Run(ctx, c.shared.rc, []string{key, lock}, c.shared.encode(key, e), ttl.Milliseconds(), holder).Err(); err != nil {
		_ = c.sharedFailed(err)
	}
}
