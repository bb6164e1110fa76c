// Package introspect asks an authorization server about opaque tokens
// (RFC 7662 token introspection) and caches its answers.
//
// A [Client] belongs to one issuer. It implements verify.Introspector: the
// verifier routes a token that is not a compact JWS to the Client of the one
// introspection-enabled issuer it may belong to, and builds the
// verify.Result from the answer's claims.
//
// Answers are cached by a keyed 128-bit MAC of the token (internal/tokenid;
// the token itself is never kept, logged or counted): an active answer no
// longer than its exp and MaxTTL, an inactive one NegativeTTL. Concurrent
// requests for one token share one upstream call, made under the Client's
// lifetime context, while each caller waits under its own. When the
// endpoint cannot be reached, a cached answer is served up to StaleFor past
// its end (never past the token's exp); after that the answer is
// keys_unavailable. The cache is bounded in entries and bytes.
//
// With Options.SharedCache the answers are kept in Redis instead, shared by
// every replica (shared.go): keyed by an HMAC of the token under a key every
// replica reads from a file, one upstream call per token and cache lifetime
// for the whole fleet (a short Redis lock; the other replicas poll for its
// answer), and any Redis failure answers keys_unavailable.
//
// The upstream calls in flight at once are bounded too (MaxConcurrent): a
// flood of distinct unknown tokens is not an unbounded load on the
// authorization server. A call that finds no free slot within MaxWait (or
// finds 4 × MaxConcurrent calls already waiting) is not made; its callers
// get keys_unavailable: never an allow, and not a stale answer, which would
// let whoever fills the slots keep a revoked token alive, unless the last
// call that ended got no answer at all (the slots are then held by calls to
// an unreachable server, whose stale answers serve). Failed calls are logged at most once per failure-log interval, with
// the number of failures not logged since the previous line.
package introspect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jwksverify/jwksverify/internal/fileread"
	"github.com/jwksverify/jwksverify/internal/redact"
	"github.com/jwksverify/jwksverify/internal/tokenid"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/verify"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Defaults applied by [New] to zero-valued options.
const (
	DefaultMaxTTL      = 5 * time.Minute
	DefaultNegativeTTL = 10 * time.Second
	DefaultStaleFor    = time.Minute
	DefaultTimeout     = 5 * time.Second
	DefaultMaxEntries  = 10000
	DefaultMaxBytes    = 16 << 20
	// DefaultMaxAnswerBytes bounds one introspection response body.
	DefaultMaxAnswerBytes = 64 << 10
	// DefaultMaxConcurrent bounds the upstream calls in flight at once.
	DefaultMaxConcurrent = 32
	// DefaultMaxWait is how long a call waits for a free slot.
	DefaultMaxWait = 200 * time.Millisecond
	// LogInterval is the shortest time between two "introspection failed"
	// lines (and between two "introspection calls at their limit" lines)
	// of one Client; the failures in between are counted in the next
	// line's "suppressed".
	LogInterval = 10 * time.Second
	// maxWaitingPerSlot bounds the calls waiting for a slot, per slot.
	maxWaitingPerSlot = 4
	// maxSecretBytes bounds the client secret file.
	maxSecretBytes = 4 << 10
	// entryOverhead is what an entry costs besides its claims (the map
	// slot, the entry, the Introspection), for the byte bound.
	entryOverhead = 160
	// resultBytes is the verify.Result an active answer keeps beside it
	// once the verifier has read it (its memo), with the memo's own
	// struct.
	resultBytes = int64(unsafe.Sizeof(verify.Result{})) + 32
	// audienceBytes is what one audience adds to that Result (a string
	// header in the list, with its growth slack).
	audienceBytes = 20
)

// memoBytes is what the verifier keeps beside an active answer of claims
// once it has read it (verify.Introspection's memo): the Result, its
// audience list, and the copy of the claims its strings are cut from.
// Counting the claims alone let a full cache hold 2.7 times MaxBytes for
// typical answers and 4.7 times for an answer of many audiences.
func memoBytes(claims json.RawMessage) int64 {
	n := resultBytes + int64(len(claims))
	var m struct {
		Aud json.RawMessage `json:"aud"`
	}
	if json.Unmarshal(claims, &m) == nil && len(m.Aud) > 0 && m.Aud[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(m.Aud, &list) == nil {
			n += int64(len(list)) * audienceBytes
		}
	} else {
		n += audienceBytes
	}
	return n
}

// Options configure a [Client].
type Options struct {
	// Issuer names the issuer the Client answers for (logs, status).
	// Required.
	Issuer string
	// Tracer records a client span "introspect" for each upstream call:
	// the issuer, the endpoint without user info, query or fragment, and
	// whether the answer was active (never the token, the claims or the
	// client's secret). Nil records none.
	Tracer trace.Tracer
	// URL is the introspection endpoint: https, or http for loopback hosts
	// (jwks.CheckURL). Empty means Endpoint is asked at each call.
	URL string
	// Endpoint returns the endpoint to use when URL is empty: the issuer's
	// discovered introspection_endpoint (jwks.Fetcher.IntrospectionEndpoint).
	// While it returns "", calls are answered keys_unavailable (stale
	// answers aside). One of URL and Endpoint is required.
	Endpoint func() string
	// ClientID and ClientSecretFile authenticate the Client to the endpoint
	// with HTTP Basic (RFC 7662 §2.1, RFC 6749 §2.3.1). The file is read at
	// each upstream call (a rotated secret is used at once), trimmed of
	// white space, and never logged. Empty ClientID means no
	// authentication; a ClientID needs a ClientSecretFile.
	ClientID, ClientSecretFile string
	// CAFile is a PEM file of the roots the endpoint's TLS certificate must
	// chain to (jwks.TLSConfig); empty means the system roots. Not used
	// with HTTPClient.
	CAFile string
	// HTTPClient sends the calls; New copies it and replaces its
	// CheckRedirect, so that no redirect is followed whatever its own
	// policy (a redirect is a failed call). Nil means a client of its own
	// (CAFile).
	HTTPClient *http.Client
	// InsecureAllowHTTP accepts plain http:// for non-loopback hosts. It
	// MUST NOT be used outside a trusted network: the token and the client
	// secret cross it in the clear.
	InsecureAllowHTTP bool

	// MaxTTL bounds how long an active answer is cached (never past its
	// exp). At least [MinTTL]; zero means 5m.
	MaxTTL time.Duration
	// NegativeTTL is how long an inactive answer is cached. At least
	// [MinTTL]; zero means 10s.
	NegativeTTL time.Duration
	// StaleFor is how long past its end a cached answer is still served
	// while the endpoint cannot answer. At least [MinTTL]; zero means 1m;
	// negative means never.
	StaleFor time.Duration
	// Timeout bounds one upstream call. Zero means 5s.
	Timeout time.Duration
	// MaxEntries and MaxBytes bound the cache. MaxEntries is at most
	// [MaxMaxEntries]. Zero means 10000 entries and 16 MiB.
	MaxEntries int
	MaxBytes   int64
	// MaxAnswerBytes bounds one response body. Zero means 64 KiB.
	MaxAnswerBytes int64
	// MaxConcurrent bounds the upstream calls in flight at once (one per
	// distinct token without a fresh cached answer), at most
	// [MaxMaxConcurrent]. Zero means 32.
	MaxConcurrent int
	// MaxWait is how long a call waits for one of the MaxConcurrent slots;
	// past it the call is not made and its callers are answered
	// keys_unavailable ([ErrOverloaded]), not from a stale cached answer.
	// In [MinMaxWait, MaxMaxWait]; zero means 200ms.
	MaxWait time.Duration

	// SharedCache keeps the answers in Redis instead of in the process,
	// shared by every replica whose Redis and SharedKeyFile are the same
	// (see shared.go): one upstream call per token and cache lifetime for
	// the whole fleet. MaxEntries and MaxBytes then bound nothing; each
	// entry is bounded by MaxAnswerBytes and expires at its stale end. Any
	// Redis failure answers keys_unavailable.
	SharedCache bool
	// SharedKeyFile holds the key of the MAC that names a token's entry
	// (raw bytes, at least [MinSharedKeyBytes]); every replica must read
	// the same key. Required with SharedCache, refused without. It is read
	// by New.
	SharedKeyFile string
	// Redis is the client of the shared cache; required by New with
	// SharedCache (CheckOptions does not look at it).
	Redis *redisconn.Client

	// Logger receives failed calls (never the token or the secret). Nil
	// means slog.Default().
	Logger *slog.Logger
}

// Stats are a Client's counters.
type Stats struct {
	// Calls counts upstream calls by their result: active, inactive, error.
	Active, Inactive, Errors uint64
	// Hits counts answers served from the cache while fresh.
	Hits uint64
	// Stale counts cached answers served past their end because the
	// endpoint could not answer.
	Stale uint64
	// Overloaded counts calls not made because MaxConcurrent calls were in
	// flight for all of MaxWait.
	Overloaded uint64
	// SharedErrors counts the shared cache's Redis failures (each answered
	// keys_unavailable); SharedWaits the flights that waited for another
	// replica's upstream call instead of making their own.
	SharedErrors, SharedWaits uint64
	// InFlight is the number of upstream calls in flight now.
	InFlight int
	// Entries and Bytes are the cache's current size.
	Entries int
	Bytes   int64
}

// Status is what /v1/issuers shows of a Client.
type Status struct {
	// Endpoint is the endpoint in use (without query), "" while unknown.
	Endpoint string
	// LastSuccess and LastError are the last answered call's time and the
	// last failed call's error text ("" after a success).
	LastSuccess time.Time
	LastError   string
	Stats       Stats
}

// Client answers for one issuer's opaque tokens. It is safe for concurrent
// use. It owns the goroutines of its upstream calls: Close cancels them and
// waits for them.
type Client struct {
	opts   Options
	http   *http.Client
	ids    *tokenid.Hasher
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.RWMutex
	entries map[tokenid.ID]*entry
	bytes   int64

	fmu    sync.Mutex
	closed bool
	calls  map[tokenid.ID]*call

	slots   chan struct{} // one element per upstream call in flight
	waiting atomic.Int64  // calls waiting in acquire for a slot

	active, inactive, errs, hits, stale, overloaded atomic.Uint64

	shared *shared // nil: the cache is in the process

	smu         sync.Mutex
	lastSuccess time.Time
	lastErr     string
	// pausedUntil is the end of the pause the endpoint asked for with
	// Retry-After (a 429 or 503): no call is made before it.
	pausedUntil time.Time
	// unreachable: the last call that ended got no response from the
	// endpoint (dial, TLS, a timeout), which says nothing about the token
	// asked; cleared by the next answered call.
	unreachable bool

	failLog, busyLog logLimit
}

// logLimit lets one line through per LogInterval and counts the others.
type logLimit struct {
	mu         sync.Mutex
	last       time.Time // of the last line written; zero: none yet
	suppressed int
}

// allow reports whether a line may be written at now, and how many were
// suppressed since the last one written; a refused line is counted.
func (l *logLimit) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Before(l.last.Add(LogInterval)) {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}

// entry is one cached answer. Immutable once stored.
type entry struct {
	ans   *verify.Introspection // nil: inactive
	fresh time.Time             // served from the cache until then
	stale time.Time             // served while the endpoint fails until then
	size  int64

	// After a failed call for its token, the endpoint is not asked again
	// before retry (unix nanoseconds): the stale answer serves meanwhile.
	// The hold doubles with each failure in a row (failures), from
	// retryFirst up to MaxTTL, the longest an answer is held anyway. A
	// successful call replaces the entry.
	retry    atomic.Int64
	failures atomic.Uint32
}

// retryFirst is the hold after a token's first failed call.
const retryFirst = time.Second

// failed records a failed call for the entry's token at now: the next call
// waits retryFirst × 2^(failures in a row − 1), at most maxHold.
func (e *entry) failed(now time.Time, maxHold time.Duration) {
	n := min(e.failures.Add(1), 31) // 1s<<30 is 34 years, far from overflow
	hold := min(retryFirst<<(n-1), maxHold)
	e.retry.Store(now.Add(hold).UnixNano())
}

// holding reports whether a failed call's hold runs at now, and the stale
// answer serves without asking.
func (e *entry) holding(now time.Time) bool {
	return now.Before(e.stale) && now.UnixNano() < e.retry.Load()
}

// call is one upstream call in flight, shared by every caller that asks for
// the same token meanwhile.
type call struct {
	done chan struct{}
	e    *entry // the answer, or nil with err
	err  error
}

// Bounds of the options [New] accepts (zero still means the default).
const (
	// MinTTL is the shortest MaxTTL, NegativeTTL and positive StaleFor.
	MinTTL = time.Second
	// MaxMaxEntries bounds MaxEntries.
	MaxMaxEntries = 10_000_000
	// MaxMaxConcurrent bounds MaxConcurrent.
	MaxMaxConcurrent = 10000
	// MinMaxWait and MaxMaxWait bound MaxWait.
	MinMaxWait, MaxMaxWait = time.Millisecond, 5 * time.Second
)

// CheckOptions reports whether [New] accepts opts (an error wrapping
// [ErrInvalidOptions] if not, naming the field first), without I/O.
func CheckOptions(opts Options) error {
	_, err := opts.withDefaults()
	return err
}

// withDefaults validates o and fills its zero values.
func (o Options) withDefaults() (Options, error) {
	invalid := func(field, format string, args ...any) (Options, error) {
		return Options{}, invalidOption(field, format, args...)
	}
	switch {
	case o.Issuer == "":
		return invalid("", "Issuer is required")
	case o.URL == "" && o.Endpoint == nil:
		return invalid("", "one of URL and Endpoint is required")
	case o.ClientID != "" && o.ClientSecretFile == "":
		return invalid("ClientID", "set without ClientSecretFile; they go together")
	case o.ClientID == "" && o.ClientSecretFile != "":
		return invalid("ClientSecretFile", "set without ClientID; they go together")
	case o.CAFile != "" && o.HTTPClient != nil:
		return invalid("", "CAFile cannot be combined with HTTPClient")
	case o.SharedCache && o.SharedKeyFile == "":
		return invalid("SharedKeyFile", "empty, and SharedCache is on; every replica needs the same key")
	case !o.SharedCache && o.SharedKeyFile != "":
		return invalid("SharedKeyFile", "set, and SharedCache is off")
	case o.SharedCache && (o.MaxEntries != 0 || o.MaxBytes != 0):
		return invalid("MaxEntries", "set, and SharedCache is on: Redis holds the answers, each until its lifetime ends")
	case o.MaxTTL < 0 || o.NegativeTTL < 0 || o.Timeout < 0 || o.MaxBytes < 0 || o.MaxAnswerBytes < 0 || o.MaxWait < 0:
		return invalid("", "negative durations or bounds")
	}
	if o.URL != "" {
		if err := jwks.CheckURL(o.URL, o.InsecureAllowHTTP); err != nil {
			return invalid("URL", "%w", err)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"MaxTTL", o.MaxTTL}, {"NegativeTTL", o.NegativeTTL}, {"StaleFor", o.StaleFor}} {
		if d.v > 0 && d.v < MinTTL {
			return invalid(d.name, "%s is below the minimum of %s", d.v, MinTTL)
		}
	}
	switch {
	case o.MaxEntries < 0 || o.MaxEntries > MaxMaxEntries:
		return invalid("MaxEntries", "%d is out of range [1, %d]", o.MaxEntries, MaxMaxEntries)
	case o.MaxConcurrent < 0 || o.MaxConcurrent > MaxMaxConcurrent:
		return invalid("MaxConcurrent", "%d is out of range [1, %d]", o.MaxConcurrent, MaxMaxConcurrent)
	case o.MaxWait != 0 && (o.MaxWait < MinMaxWait || o.MaxWait > MaxMaxWait):
		return invalid("MaxWait", "%s is out of range [%s, %s]", o.MaxWait, MinMaxWait, MaxMaxWait)
	}
	for _, d := range []struct {
		p   *time.Duration
		def time.Duration
	}{{&o.MaxTTL, DefaultMaxTTL}, {&o.NegativeTTL, DefaultNegativeTTL}, {&o.StaleFor, DefaultStaleFor}, {&o.Timeout, DefaultTimeout}, {&o.MaxWait, DefaultMaxWait}} {
		if *d.p == 0 {
			*d.p = d.def
		}
	}
	o.StaleFor = max(o.StaleFor, 0)
	o.MaxEntries, o.MaxBytes = cmp.Or(o.MaxEntries, DefaultMaxEntries), cmp.Or(o.MaxBytes, DefaultMaxBytes)
	o.MaxAnswerBytes, o.MaxConcurrent = cmp.Or(o.MaxAnswerBytes, DefaultMaxAnswerBytes), cmp.Or(o.MaxConcurrent, DefaultMaxConcurrent)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// Same reports whether a [Client] built from a answers as one built from
// b would, so that a configuration reload may keep a's client, its answer
// cache and all: every option equal. Endpoint, which a caller sets to a
// function, is never the same (a function cannot be compared), HTTPClient
// and Logger only when they are the same one.
func Same(a, b Options) bool {
	if a.Endpoint != nil || b.Endpoint != nil || a.HTTPClient != b.HTTPClient || a.Logger != b.Logger || a.Redis != b.Redis || a.Tracer != b.Tracer {
		return false
	}
	a.HTTPClient, a.Logger, a.Redis, b.HTTPClient, b.Logger, b.Redis = nil, nil, nil, nil, nil, nil
	a.Tracer, b.Tracer = nil, nil
	return reflect.DeepEqual(a, b)
}

// LongestWait is the longest a [Client.Introspect] call of a Client built
// from o blocks when its context does not end it first: MaxWait for a slot,
// then one upstream call of Timeout, their zero values meaning their
// defaults. A server's request timeouts must not be shorter.
func (o Options) LongestWait() time.Duration {
	return cmp.Or(o.MaxWait, DefaultMaxWait) + cmp.Or(o.Timeout, DefaultTimeout)
}

// New validates opts ([CheckOptions]), applies defaults and returns a
// Client. It does no I/O besides reading CAFile.
func New(opts Options) (*Client, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var hc *http.Client
	if opts.HTTPClient != nil {
		// A copy: the caller's client keeps its own policy elsewhere.
		cp := *opts.HTTPClient
		hc = &cp
	} else {
		tr, err := jwks.NewTransport(opts.CAFile, 64<<10)
		if err != nil {
			return nil, err
		}
		hc = &http.Client{Transport: tr}
	}
	// The token and the credentials go to the configured endpoint only,
	// and only its own answer is one: a redirect is a failed call (a
	// caller's client followed it, and a 302's target, asked without the
	// token, could answer active for every token).
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &Client{
		opts:    opts,
		http:    hc,
		ids:     tokenid.New(true),
		log:     opts.Logger.With("issuer", opts.Issuer),
		entries: make(map[tokenid.ID]*entry),
		calls:   make(map[tokenid.ID]*call),
		slots:   make(chan struct{}, opts.MaxConcurrent),
	}
	if opts.SharedCache {
		if c.shared, err = newShared(opts); err != nil {
			return nil, err
		}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Close cancels the upstream calls in flight and waits for them; later calls
// of Introspect answer keys_unavailable (cached answers aside). It is
// idempotent and returns nil.
func (c *Client) Close() error {
	c.fmu.Lock()
	c.closed = true
	c.fmu.Unlock()
	c.cancel()
	c.wg.Wait()
	if c.opts.HTTPClient == nil {
		c.http.CloseIdleConnections()
	}
	return nil
}

// Introspect implements verify.Introspector: the cached answer for token
// when fresh, else the endpoint's answer (one call shared by every
// concurrent caller for the same token), else a cached answer within its
// stale window. It returns an error wrapping verify.ErrInactive for an
// inactive token, and one wrapping verify.ErrKeysUnavailable when no answer
// could be had. It blocks for at most one upstream call, bounded by the
// Client's Timeout and by ctx.
func (c *Client) Introspect(ctx context.Context, token string, now time.Time) (*verify.Introspection, error) {
	id := c.ids.Of(token)
	var e *entry
	if c.shared != nil {
		if err := ctx.Err(); err != nil {
			// Not the shared cache failing: its Redis is not asked.
			return nil, callerDone(err)
		}
		var err error
		if e, err = c.shared.get(ctx, c.shared.key(token)); err != nil {
			return nil, c.sharedFailed(err)
		}
	} else {
		c.mu.RLock()
		e = c.entries[id]
		c.mu.RUnlock()
	}
	if e != nil && now.Before(e.fresh) {
		c.hits.Add(1)
		return e.answer()
	}
	if e != nil && e.holding(now) {
		// The last call for this token failed a moment ago: its stale
		// answer serves, and the failing endpoint is not asked again for
		// every request (no retry storm); a token without an answer at
		// hand still asks.
		c.stale.Add(1)
		return e.answer()
	}
	if err := ctx.Err(); err != nil {
		// The caller is gone, or its wait budget spent (a batch past its
		// deadline answers its remaining opaque tokens here): a call
		// nobody waits for would still take a slot and reach the server,
		// one per token of such a batch.
		return nil, callerDone(err)
	}

	c.fmu.Lock()
	if c.closed {
		c.fmu.Unlock()
		return c.staleOr(e, now, fmt.Errorf("%w: %w", verify.ErrKeysUnavailable, ErrClosed))
	}
	cl := c.calls[id]
	if cl == nil {
		cl = &call{done: make(chan struct{})}
		c.calls[id] = cl
		c.wg.Add(1)
		go c.run(id, token, now, cl)
	}
	c.fmu.Unlock()

	select {
	case <-cl.done:
	case <-ctx.Done():
		return nil, callerDone(ctx.Err())
	}
	if cl.err != nil {
		// With the shared cache, a flight that never got its turn at the
		// token's lock (errNoTurn) is refused as a slot is.
		noSlot := errors.Is(cl.err, ErrOverloaded) || errors.Is(cl.err, errNoTurn)
		if noSlot && c.endpointDown(now) {
			// The slots are held by calls to an endpoint known not to
			// answer (the last call ended unanswered): the server is
			// unreachable, whoever fills the slots, and its stale answers
			// serve as for any unreachable server.
			return c.staleOr(e, now, cl.err)
		}
		if noSlot || errors.Is(cl.err, ErrShared) {
			// Not the endpoint failing: anyone can fill the slots with
			// random tokens, and a stale answer here would keep a token
			// the server has since revoked alive for as long as they do.
			// A shared cache that failed fails closed.
			return nil, cl.err
		}
		return c.staleOr(e, now, cl.err)
	}
	return cl.e.answer()
}

// endpointDown reports whether the endpoint is known not to answer at now:
// the last call that ended got no response, or the endpoint asked for a
// pause (Retry-After) that still runs. An answer the server gave (any
// status, a malformed body) does not count: a crafted token could make
// it, and with a flood of random tokens keep revoked tokens alive.
func (c *Client) endpointDown(now time.Time) bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	return c.unreachable || now.Before(c.pausedUntil)
}

// callerDone is the error of a caller whose context ended (err) before an
// answer: no answer could be had in its time.
func callerDone(err error) error {
	return fmt.Errorf("%w: introspection: %w", verify.ErrKeysUnavailable, err)
}

// answer is the verifier's answer for an entry.
func (e *entry) answer() (*verify.Introspection, error) {
	if e.ans == nil {
		return nil, fmt.Errorf("%w: the authorization server says the token is not active", verify.ErrInactive)
	}
	return e.ans, nil
}

// staleOr serves e while within its stale window, else returns err.
func (c *Client) staleOr(e *entry, now time.Time, err error) (*verify.Introspection, error) {
	if e != nil && now.Before(e.stale) {
		c.stale.Add(1)
		return e.answer()
	}
	return nil, err
}

// run makes the upstream call of cl under the Client's lifetime and
// publishes its answer.
func (c *Client) run(id tokenid.ID, token string, now time.Time, cl *call) {
	defer c.wg.Done()
	defer func() {
		c.fmu.Lock()
		delete(c.calls, id)
		c.fmu.Unlock()
		close(cl.done)
	}()
	if c.shared != nil {
		c.runShared(token, now, cl)
		return
	}
	// An answer another flight stored since the caller looked (groupcache:
	// check again inside the flight).
	c.mu.RLock()
	e := c.entries[id]
	c.mu.RUnlock()
	if e != nil && now.Before(e.fresh) {
		cl.e = e
		return
	}
	held := e
	if e, cl.err = c.call(c.ctx, token, now); cl.err == nil {
		cl.e = e
		c.store(id, e, now)
	} else if held != nil && (errors.Is(cl.err, ErrUpstream) || errors.Is(cl.err, ErrBadAnswer)) {
		// The endpoint failed for this token (not a slot refused, not a
		// shared cache, not a close): hold its next call.
		held.failed(now, c.opts.MaxTTL)
	}
}

// call takes a slot and makes one upstream call under ctx (bounded by
// Timeout too), and returns the entry of its answer or an error wrapping
// verify.ErrKeysUnavailable.
func (c *Client) call(ctx context.Context, token string, now time.Time) (*entry, error) {
	c.smu.Lock()
	until := c.pausedUntil
	c.smu.Unlock()
	if now.Before(until) {
		// Like an unreachable endpoint (a stale answer may serve), without
		// a call: the server asked for the pause.
		c.errs.Add(1)
		return nil, fmt.Errorf("%w: %w: the endpoint asked (Retry-After) not to be called before %s", verify.ErrKeysUnavailable, ErrUpstream, until.UTC().Format(time.RFC3339))
	}
	if err := c.acquire(now); err != nil {
		return nil, fmt.Errorf("%w: %w", verify.ErrKeysUnavailable, err)
	}
	defer func() { <-c.slots }()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	a, err := c.askTraced(ctx, token)
	if err != nil {
		c.errs.Add(1)
		c.smu.Lock()
		c.lastErr = err.Error()
		// A call that got no response marks the endpoint unreachable;
		// an answered one clears the mark. One whose context ended first
		// (a shared-cache flight's budget, spent waiting for another
		// replica's lock; the Client closed) says nothing about the
		// server either way: the mark is left as it was.
		var ue *unreachableError
		switch {
		case !errors.As(err, &ue):
			c.unreachable = false
		case parent.Err() == nil:
			c.unreachable = true
		}
		var ra *retryAfterError
		if errors.As(err, &ra) {
			// At most MaxTTL: the longest the server's word is held anyway.
			c.pausedUntil = now.Add(min(ra.after, c.opts.MaxTTL))
		}
		c.smu.Unlock()
		if ok, n := c.failLog.allow(now); ok && c.ctx.Err() == nil {
			c.log.Warn("introspection failed", "err", err.Error(), "suppressed", n)
		}
		return nil, fmt.Errorf("%w: %w", verify.ErrKeysUnavailable, err)
	}
	c.smu.Lock()
	c.lastSuccess, c.lastErr, c.unreachable = now, "", false
	c.smu.Unlock()
	e := &entry{size: entryOverhead}
	if a.Active {
		c.active.Add(1)
		e.ans = &verify.Introspection{Claims: a.Claims}
		e.size += int64(len(a.Claims)) + memoBytes(a.Claims)
		e.fresh = now.Add(c.opts.MaxTTL)
		e.stale = e.fresh.Add(c.opts.StaleFor)
		if !a.ExpiresAt.IsZero() {
			// Never past the token's own exp, stale or not.
			e.fresh = minTime(e.fresh, a.ExpiresAt)
			e.stale = minTime(e.stale, a.ExpiresAt)
		}
	} else {
		c.inactive.Add(1)
		e.fresh = now.Add(c.opts.NegativeTTL)
		e.stale = e.fresh.Add(c.opts.StaleFor)
	}
	return e, nil
}

// acquire takes one of the MaxConcurrent slots, waiting at most MaxWait.
func (c *Client) acquire(now time.Time) error {
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	select {
	case c.slots <- struct{}{}:
		return nil
	default:
	}
	// At most maxWaitingPerSlot × MaxConcurrent calls wait for a slot; one
	// more is refused at once, so a flood holds a bounded number of
	// goroutines and timers, not its rate × MaxWait.
	if c.waiting.Add(1) <= int64(maxWaitingPerSlot*c.opts.MaxConcurrent) {
		t := time.NewTimer(c.opts.MaxWait)
		select {
		case c.slots <- struct{}{}:
			t.Stop()
			c.waiting.Add(-1)
			return nil
		case <-c.ctx.Done():
			t.Stop()
			c.waiting.Add(-1)
			return ErrClosed
		case <-t.C:
		}
	}
	c.waiting.Add(-1)
	c.overloaded.Add(1)
	if ok, n := c.busyLog.allow(now); ok {
		c.log.Warn("introspection calls at their limit", "max_concurrent", c.opts.MaxConcurrent,
			"max_wait", c.opts.MaxWait.String(), "suppressed", n)
	}
	return fmt.Errorf("%w: %d calls in flight for %s", ErrOverloaded, c.opts.MaxConcurrent, c.opts.MaxWait)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// store caches e, evicting entries past their stale window first, then any,
// to stay within MaxEntries and MaxBytes. An inactive answer evicts only
// inactive answers (or those past their stale window): anyone can make
// inactive answers by the thousand with random strings, and at random they
// evicted the active answers of the users behind forward-auth, whose next
// requests then needed calls of their own, held by the same flood at
// MaxConcurrent. Found none among those sampled, it is not kept.
func (c *Client) store(id tokenid.ID, e *entry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The earlier answer goes whether or not e is kept: the server has
	// answered since, and it must not serve stale in e's place.
	if old := c.entries[id]; old != nil {
		c.bytes -= old.size
		delete(c.entries, id)
	}
	if !now.Before(e.stale) && !now.Before(e.fresh) {
		return // nothing to serve later (exp already past)
	}
	inactive := e.ans == nil
	for len(c.entries) > 0 && (len(c.entries) >= c.opts.MaxEntries || c.bytes+e.size > c.opts.MaxBytes) {
		// Sample a few entries (map order is random): the first past its
		// stale window, else the last sampled (for an inactive answer,
		// the last inactive one sampled).
		var victim tokenid.ID
		found, n := false, 0
		for k, v := range c.entries {
			past := !now.Before(v.stale)
			if past || !inactive || v.ans == nil {
				victim, found = k, true
			}
			if n++; past || n >= 8 {
				break
			}
		}
		if !found {
			return
		}
		c.bytes -= c.entries[victim].size
		delete(c.entries, victim)
	}
	if e.size > c.opts.MaxBytes {
		return
	}
	c.entries[id] = e
	c.bytes += e.size
}

// askTraced is ask inside an "introspect" client span (SPEC: a span for
// each introspection call), when the Client has a Tracer and the request's
// trace is sampled.
func (c *Client) askTraced(ctx context.Context, token string) (Answer, error) {
	if c.opts.Tracer == nil {
		return c.ask(ctx, token)
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsSampled() {
		return c.ask(ctx, token) // a child would not be sampled either
	}
	endpoint := c.opts.URL
	if endpoint == "" {
		endpoint = c.opts.Endpoint()
	}
	ctx, span := c.opts.Tracer.Start(ctx, "introspect", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("jwksverify.issuer", c.opts.Issuer), attribute.String("url.full", redact.String(endpoint))))
	defer span.End()
	a, err := c.ask(ctx, token)
	if err != nil {
		span.SetStatus(codes.Error, err.Error()) // its URL is redacted; never the token or a secret
		return a, err
	}
	span.SetAttributes(attribute.Bool("jwksverify.active", a.Active))
	return a, nil
}

// ask makes one introspection call.
func (c *Client) ask(ctx context.Context, token string) (Answer, error) {
	endpoint := c.opts.URL
	if endpoint == "" {
		endpoint = c.opts.Endpoint()
		if endpoint == "" {
			return Answer{}, fmt.Errorf("%w: no introspection_endpoint discovered yet", ErrUpstream)
		}
		if err := jwks.CheckURL(endpoint, c.opts.InsecureAllowHTTP); err != nil {
			return Answer{}, fmt.Errorf("%w: %w", ErrUpstream, err)
		}
	}
	shown := redact.String(endpoint)
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %s: %w", ErrUpstream, shown, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "jwksverify")
	if c.opts.ClientID != "" {
		secret, err := readSecret(c.opts.ClientSecretFile)
		if err != nil {
			return Answer{}, fmt.Errorf("%w: %w", ErrUpstream, err)
		}
		// RFC 6749 §2.3.1: both form-urlencoded before Basic.
		req.SetBasicAuth(url.QueryEscape(c.opts.ClientID), url.QueryEscape(secret))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // *url.Error repeats the URL
		}
		return Answer{}, &unreachableError{fmt.Errorf("%w: POST %s: %w", ErrUpstream, shown, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// An answer, even a 5xx: a server that answers fast frees its
		// slot, and one that fails on a crafted token must not let that
		// token turn the slot rule off (it is not "unreachable").
		err := fmt.Errorf("%w: POST %s: status %d", ErrUpstream, shown, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			if d, ok := jwks.RetryAfter(resp.Header, time.Now()); ok && d > 0 {
				return Answer{}, &retryAfterError{err: err, after: d}
			}
		}
		return Answer{}, err
	}
	body, err := readBounded(resp, c.opts.MaxAnswerBytes)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: POST %s: %w", ErrUpstream, shown, err)
	}
	a, err := Decode(body)
	if err != nil {
		return Answer{}, fmt.Errorf("POST %s: %w", shown, err)
	}
	return a, nil
}

// retryAfterError is a failed call whose answer asked, with Retry-After
// (a 429 or 503 of a server shedding load), not to be called again before
// after.
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// unreachableError is a failed call that got no response at all (dial,
// TLS, a timeout): the server said nothing, about this token or any.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

func readBounded(resp *http.Response, limit int64) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("answer of %d bytes (limit %d)", resp.ContentLength, limit)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("answer over %d bytes", limit)
	}
	return b, nil
}

// readSecret reads the client secret file; its content never reaches an
// error or a log.
func readSecret(path string) (string, error) {
	b, _, err := fileread.Regular(path, maxSecretBytes)
	if err != nil {
		return "", fmt.Errorf("client secret file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("client secret file %s is empty", path)
	}
	return s, nil
}

// Stats returns the Client's counters. It does not block on calls.
func (c *Client) Stats() Stats {
	c.mu.RLock()
	n, b := len(c.entries), c.bytes
	c.mu.RUnlock()
	st := Stats{
		Active: c.active.Load(), Inactive: c.inactive.Load(), Errors: c.errs.Load(),
		Hits: c.hits.Load(), Stale: c.stale.Load(), Entries: n, Bytes: b,
		Overloaded: c.overloaded.Load(), InFlight: len(c.slots),
	}
	if c.shared != nil {
		st.SharedErrors, st.SharedWaits = c.shared.errs.Load(), c.shared.waits.Load()
	}
	return st
}

// Status returns the endpoint in use, the last outcome and the counters.
func (c *Client) Status() Status {
	ep := c.opts.URL
	if ep == "" {
		ep = c.opts.Endpoint()
	}
	if ep != "" {
		ep = redact.String(ep)
	}
	c.smu.Lock()
	st := Status{Endpoint: ep, LastSuccess: c.lastSuccess, LastError: c.lastErr}
	c.smu.Unlock()
	st.Stats = c.Stats()
	return st
}
