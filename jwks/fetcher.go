package jwks

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/redact"
	"github.com/jwksverify/jwksverify/verify"
)

// maxRememberedKid bounds the length of a kid remembered as missing: kids
// come from tokens, and real ones are short (27 to 43 characters at the
// major IdPs). A longer absent kid is not remembered; the budget still
// bounds what it costs.
const maxRememberedKid = 256

// Fetcher keeps one issuer's key set fresh in the background. It owns one
// goroutine, started by New and stopped by Close (or, for one that another
// has replaced, by Retire), plus at most one fetch in flight at a time. It
// is safe for concurrent use.
//
// Every fetch — the start-up fetch, a periodic refresh, a retry or an
// unknown-kid refresh — is one shared flight: a caller that arrives while a
// flight is running joins it instead of starting another, so the source sees
// at most one request (plus discovery) at a time.
type Fetcher struct {
	opts      Options // defaults applied
	keys      *cache.Keys
	client    *http.Client
	transport *Transport          // owned (closed by Close), or nil for a caller's client
	source    string              // cache.Status.Source
	staticKid map[string]struct{} // the kids of StaticKeys: a source's key with one is skipped
	statePath string              // "" when nothing is persisted
	log       *slog.Logger

	ctx      context.Context // the fetcher's lifetime; flights run under it
	cancel   context.CancelFunc
	loopDone chan struct{}
	flights  sync.WaitGroup
	kick     chan struct{} // a flight completed: re-arm the refresh timer
	ready    chan struct{} // closed when a usable set is first published
	readyOne sync.Once
	sourced  atomic.Bool // a set holding the source's keys has been published
	sf       singleflight.Group
	stats    *cache.Counters // the live counters of keys
	// introspection is the introspection_endpoint of the last discovery
	// document read (IntrospectionEndpoint).
	introspection atomic.Pointer[string]

	mu          sync.Mutex
	closed      bool
	retired     bool    // Retire was called: no flight starts from then on
	cur         *flight // the flight in progress, or nil
	seq         uint64  // names flights: each has its own singleflight key
	lastUnknown time.Time
	st          fetchState // written only by the running flight
}

// flight is one fetch in progress, shared by every caller that joins it.
type flight struct {
	key   string
	fn    func() (any, error)
	start time.Time           // when it started: unknown-kid waits count from it
	kids  map[string]struct{} // unknown kids asked for during the flight; f.mu
	// budget reports that the flight holds the unknown-kid budget: an unknown
	// kid started it, or joined it while the budget was free. f.mu.
	budget bool
	// parent is the span of the unknown-kid wait that started the flight,
	// set before the flight runs; invalid for a scheduled one.
	parent trace.SpanContext
	// unconditional, set before the flight runs, makes its request carry no
	// validators: an unknown kid started it (see attemptRemote).
	unconditional bool
	// fetched is set once the flight's fetch has ended, before it leaves
	// f.cur: a request arriving then does not join it (its kids would be
	// judged by a fetch that ended before they were asked for).
	fetched atomic.Bool
	// answered is set once the source has answered (before that answer is
	// parsed and published): a kid asked from then on waits for the flight
	// to publish, but is not judged by it (not remembered missing) and
	// spends no budget.
	answered atomic.Bool
}

// New validates opts, loads the persisted set if StateDir holds one, and
// starts the background refresh loop, whose first fetch starts at once.
// The caller must Close the Fetcher. New does no network I/O itself; use
// [Fetcher.Ready] to wait for a first usable set. With StaticKeys and no
// source, New publishes them, is ready at once and starts no goroutine.
func New(opts Options) (*Fetcher, error) {
	f, err := build(opts)
	if err != nil {
		return nil, err
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	if !f.hasSource() {
		f.publishStatic()
		f.readyOne.Do(func() { close(f.ready) })
		close(f.loopDone) // no loop: nothing to refresh
		return f, nil
	}
	inherited := f.inherit(f.opts.Previous)
	f.opts.Previous = nil // not kept: a chain of reloads must not pin every old fetcher
	if f.opts.StateDir != "" && f.opts.File == "" {
		if err := os.MkdirAll(f.opts.StateDir, 0o700); err != nil {
			f.closeIdle()
			return nil, fmt.Errorf("%w: state_dir: %w", ErrInvalidOptions, err)
		}
		f.statePath = statePath(f.opts.StateDir, f.opts.Issuer, f.source)
		if !inherited { // the replaced fetcher's set is at least as new as its file
			f.loadState()
		}
	}
	if len(f.opts.StaticKeys) > 0 && !f.sourced.Load() {
		// The static keys verify while the source is still unreachable.
		f.publishStatic()
	}
	go f.loop()
	return f, nil
}

// hasSource reports whether a URL, discovery or a file is configured.
func (f *Fetcher) hasSource() bool {
	return f.opts.URL != "" || f.opts.Discovery || f.opts.File != ""
}

// build applies defaults and prepares a Fetcher without starting anything.
func build(opts Options) (*Fetcher, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &Fetcher{
		opts:     o,
		keys:     o.Keys,
		stats:    o.Keys.Counters(),
		loopDone: make(chan struct{}),
		kick:     make(chan struct{}, 1),
		ready:    make(chan struct{}),
	}
	for _, k := range o.StaticKeys {
		if k.Kid != "" {
			if f.staticKid == nil {
				f.staticKid = make(map[string]struct{}, len(o.StaticKeys))
			}
			f.staticKid[k.Kid] = struct{}{}
		}
	}
	switch {
	case o.File != "":
		f.source = "file:" + o.File
	case o.Discovery:
		f.source = "discovery:" + o.Issuer
	case o.URL != "":
		f.source = redact.String(o.URL)
		f.st.jwksURL = o.URL
	default:
		f.source = "static"
	}
	if o.URL != "" || o.Discovery {
		if f.client, f.transport, err = newClient(o); err != nil {
			return nil, err
		}
	}
	f.log = o.Logger.With("source", f.source)
	if o.Issuer != "" {
		f.log = f.log.With("issuer", o.Issuer)
	}
	return f, nil
}

// Keys returns the cache.Keys the fetcher publishes into.
func (f *Fetcher) Keys() *cache.Keys { return f.keys }

// Close stops the background loop and waits for it and any in-flight fetch
// (which is cancelled). It is idempotent and always returns nil.
func (f *Fetcher) Close() error {
	f.mu.Lock()
	already := f.closed
	f.closed = true
	f.mu.Unlock()
	if !already {
		f.cancel()
	}
	<-f.loopDone
	f.flights.Wait()
	f.closeIdle()
	return nil
}

// Retire stops the fetcher's background work at once, for a fetcher that
// another has replaced (a configuration reload): from then on no scheduled
// refresh, retry or unknown-kid refresh reaches the source, the flight in
// progress, if any, is cancelled (whoever waits for it gets its error), and
// the fetcher logs no line, writes no state file and counts no fetch.
// What it published last stays: [Fetcher.Keys] and its [Keyfunc]s serve
// that set, until it goes stale, to the requests still holding what it
// backs. [Fetcher.RefreshUnknownKid] returns an error wrapping
// [ErrRetired] without fetching; it does not wrap [verify.ErrKidAbsent]
// (the kid was not looked for), so a verifier's unknown_kid wraps
// verify.ErrKidNotRefreshed ("try later"). Retire returns once the
// background goroutine and the cancelled flight have ended: nothing the
// fetcher does is logged after it. It is idempotent; [Fetcher.Close]
// still releases the rest and is still the caller's to call.
func (f *Fetcher) Retire() {
	f.mu.Lock()
	f.retired = true
	f.mu.Unlock()
	f.cancel()
	<-f.loopDone
	f.flights.Wait()
	f.closeIdle()
}

func (f *Fetcher) closeIdle() {
	if f.transport != nil {
		f.transport.CloseIdleConnections()
	}
}

// Stats returns the fetcher's counters: the live counters of its
// [cache.Keys], which Keys().Status().Stats also reads. It does not block.
func (f *Fetcher) Stats() cache.FetchStats { return f.stats.Load() }

// Ready blocks until a first usable set is published (a fetch, a file load,
// or a persisted set still within its staleness) or ctx is done. It returns
// nil, ctx's error, or [ErrClosed] when the fetcher is closed first.
func (f *Fetcher) Ready(ctx context.Context) error {
	select {
	case <-f.ready:
		return nil
	default:
	}
	select {
	case <-f.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-f.loopDone:
		return ErrClosed
	}
}

// RefreshUnknownKid implements verify.Refresher: it refreshes the key set
// because a token named kid, which the current set does not hold.
//
// It never waits for a budget, and it waits for a refresh at most
// UnknownKidWait counted from the moment that refresh started. Under the
// fetcher's lock it does one of these:
//   - returns [ErrSuppressed] at once when the kid was proven absent within
//     UnknownKidInterval, or when the unknown-kid budget (one refresh per
//     UnknownKidInterval) is spent and the flight in progress, if any, is
//     not the one that spent it;
//   - joins the flight in progress (the budget is spent by that flight's
//     start, if it was not already);
//   - reserves the budget and starts a flight.
//
// A caller that joins waits only for what remains of UnknownKidWait since
// the flight started; one that arrives after that does not wait at all. In
// both cases, once the wait is over it gets [ErrRefreshPending]. The flight
// runs under the fetcher's lifetime, not ctx, bounded by FetchTimeout: it
// goes on in the background and publishes what it finds. The caller also
// stops waiting when ctx is done. It returns nil when a refresh completed
// (the caller reloads the set; the kid may still be absent) or when the
// current set already holds kid, and the fetch error when the refresh
// failed. After a successful flight, the kids asked for during it that are
// still absent are remembered as missing for UnknownKidInterval.
//
// The wait is measured with Now and waited on a timer of package time;
// under testing/synctest both are the bubble's.
func (f *Fetcher) RefreshUnknownKid(ctx context.Context, kid string) error {
	if f.opts.Tracer == nil {
		return f.refreshUnknownKid(ctx, kid, false)
	}
	// The kid is not secret (it is in the token's header, and in the
	// published set when it exists); the token is never seen here.
	ctx, span := f.opts.Tracer.Start(ctx, "jwks.refresh_unknown_kid", trace.WithAttributes(attrIssuer.String(f.opts.Issuer)))
	defer span.End()
	err := f.refreshUnknownKid(ctx, kid, false)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// refreshUnknownKid is RefreshUnknownKid; retried reports that the caller
// already waited out a flight whose answer came before it asked.
func (f *Fetcher) refreshUnknownKid(ctx context.Context, kid string, retried bool) error {
	if _, ok := f.keys.Load().Lookup(kid); ok {
		return nil // a refresh since the caller looked already brought it
	}
	f.mu.Lock()
	w, err := f.kidWaitLocked(ctx, kid, retried)
	f.mu.Unlock()
	if err != nil || w.done == nil {
		return err
	}
	return f.awaitKid(ctx, kid, w)
}

// kidWait is what a request for an unknown kid waits for: a flight's
// answer, for at most wait.
type kidWait struct {
	done <-chan singleflight.Result
	wait time.Duration
	// again reports a flight whose source answered before the kid was
	// asked for: once it has published, the kid is asked for again.
	again bool
}

// kidWaitLocked decides, under f.mu, what a request for kid waits for: a
// zero kidWait when the set already holds kid, an error when no refresh
// may run for it (closed, retired, no source, suppressed, a flight too old
// to wait for).
func (f *Fetcher) kidWaitLocked(ctx context.Context, kid string, retried bool) (kidWait, error) {
	if f.closed {
		return kidWait{}, ErrClosed
	}
	if f.retired {
		return kidWait{}, ErrRetired
	}
	if !f.hasSource() {
		return kidWait{}, fmt.Errorf("%w: static keys only, no source to refresh (%w)", ErrSuppressed, verify.ErrKidAbsent)
	}
	// Again under the lock: a flight that ended since the first look has
	// published its set before it left f.cur (a late arrival of a refresh
	// that brought the kid must not be told the budget is spent).
	if _, ok := f.keys.Load().Lookup(kid); ok {
		return kidWait{}, nil
	}
	now := f.opts.Now()
	fl, late, err := f.flightForKidLocked(ctx, kid, now)
	if err != nil {
		return kidWait{}, err
	}
	if late && !retried {
		// Its answer is in but not yet published, and it came before this
		// kid was asked for: let it publish, then ask again as if it had
		// never been seen (it may have brought the kid; if not, this kid
		// gets a refresh of its own when the budget allows). A late flight
		// met again (retried) is only waited for.
		return kidWait{done: f.sf.DoChan(fl.key, fl.fn), wait: f.opts.UnknownKidWait, again: true}, nil
	}
	if !late && len(fl.kids) < cache.MaxMissing && len(kid) <= maxRememberedKid {
		fl.kids[kid] = struct{}{}
	}
	wait := fl.start.Add(f.opts.UnknownKidWait).Sub(now)
	if wait <= 0 {
		return kidWait{}, fmt.Errorf("%w: in progress for %v, longer than the %v wait", ErrRefreshPending,
			now.Sub(fl.start).Round(time.Millisecond), f.opts.UnknownKidWait)
	}
	return kidWait{done: f.sf.DoChan(fl.key, fl.fn), wait: wait}, nil
}

// flightForKidLocked picks, under f.mu, the flight a request for kid at
// now waits for, spending the unknown-kid budget as it goes: the flight in
// progress, or a new one; an error wrapping [ErrSuppressed] when the budget
// allows none. late reports a flight whose source answered before kid was
// asked for.
func (f *Fetcher) flightForKidLocked(ctx context.Context, kid string, now time.Time) (fl *flight, late bool, _ error) {
	fl = f.cur
	if fl != nil && fl.fetched.Load() {
		fl = nil // its fetch is over: it cannot bring a kid asked for now
	}
	spent := !f.lastUnknown.IsZero() && now.Sub(f.lastUnknown) < f.opts.UnknownKidInterval
	late = fl != nil && fl.answered.Load()
	switch {
	case f.keys.RecentlyMissing(kid, now):
		f.stats.SuppressedRefreshes.Add(1)
		return nil, false, fmt.Errorf("%w: kid was absent from a refresh moments ago (%w)", ErrSuppressed, verify.ErrKidAbsent)
	case late:
		// Wait for its publish (see kidWaitLocked); it spends no budget.
	case fl != nil && fl.budget:
		// Join: the fetch in progress is the one this interval's budget paid for.
	case fl != nil && !spent:
		// Join: the fetch in progress (periodic, a retry) is as fresh as a
		// new one would be. It spends the budget from its start, so that when
		// it fails (a hung IdP) the next unknown kid does not start another
		// one at once.
		fl.budget, f.lastUnknown = true, fl.start
	case spent:
		// A flight started by others after the budget was spent (a retry of
		// a hung fetch) is not waited for either: a suppressed request never
		// waits.
		f.stats.SuppressedRefreshes.Add(1)
		return nil, false, fmt.Errorf("%w: one unknown-kid refresh per %v", ErrSuppressed, f.opts.UnknownKidInterval)
	default:
		f.lastUnknown = now
		f.stats.UnknownKidRefreshes.Add(1)
		fl = f.startLocked()
		fl.budget, fl.unconditional = true, true
		fl.parent = trace.SpanContextFromContext(ctx) // its fetch spans are children of this wait's
	}
	return fl, late, nil
}

// awaitKid waits for w's flight, at most w.wait and no longer than ctx:
// its fetch error, or after a late flight published, a new request for
// kid.
func (f *Fetcher) awaitKid(ctx context.Context, kid string, w kidWait) error {
	t := time.NewTimer(w.wait)
	defer t.Stop()
	select {
	case r := <-w.done:
		if w.again {
			return f.refreshUnknownKid(ctx, kid, true)
		}
		return r.Err
	case <-t.C:
		if w.again {
			return fmt.Errorf("%w: not published within the %v wait", ErrRefreshPending, f.opts.UnknownKidWait)
		}
		return fmt.Errorf("%w: not done within the %v wait", ErrRefreshPending, f.opts.UnknownKidWait)
	case <-ctx.Done():
		return fmt.Errorf("jwks: waiting for the key refresh: %w", context.Cause(ctx))
	}
}

// startLocked prepares a new flight; the caller must start it with
// f.sf.DoChan(fl.key, fl.fn) before releasing f.mu.
func (f *Fetcher) startLocked() *flight {
	f.seq++
	fl := &flight{key: strconv.FormatUint(f.seq, 10), start: f.opts.Now(), kids: make(map[string]struct{})}
	f.flights.Add(1)
	fl.fn = func() (any, error) {
		defer f.flights.Done()
		ctx := f.ctx // the fetcher's lifetime, never a caller's
		if fl.parent.IsValid() {
			ctx = trace.ContextWithSpanContext(ctx, fl.parent)
		}
		err := f.attempt(ctx, fl.unconditional, func() { fl.answered.Store(true) })
		fl.fetched.Store(true)
		f.mu.Lock()
		if err == nil && len(fl.kids) > 0 {
			set, until := f.keys.Load(), f.opts.Now().Add(f.opts.UnknownKidInterval)
			for kid := range fl.kids {
				if _, ok := set.Lookup(kid); !ok {
					f.keys.RememberMissing(kid, until)
				}
			}
		}
		if f.cur == fl {
			f.cur = nil
		}
		f.mu.Unlock()
		select {
		case f.kick <- struct{}{}:
		default:
		}
		return nil, err
	}
	f.cur = fl
	return fl
}

// loop is the fetcher's goroutine: fetch, wait for the next refresh (or for
// another flight to reset the schedule), repeat until Close.
func (f *Fetcher) loop() {
	defer close(f.loopDone)
	for {
		f.refreshAndWait()
		select {
		case <-f.kick: // our own flight's signal: the schedule is already current
		default:
		}
		if !f.waitNext() {
			return
		}
	}
}

// refreshAndWait starts a flight, or joins the one in progress, and waits
// for it.
func (f *Fetcher) refreshAndWait() {
	f.mu.Lock()
	if f.closed || f.retired {
		f.mu.Unlock()
		return
	}
	fl := f.cur
	if fl == nil {
		fl = f.startLocked()
	}
	ch := f.sf.DoChan(fl.key, fl.fn)
	f.mu.Unlock()
	select {
	case <-ch:
	case <-f.ctx.Done():
	}
}

// waitNext waits until the next scheduled attempt. A flight completed
// meanwhile (an unknown-kid refresh) moves the schedule: the timer is re-armed.
// It reports false when the fetcher is closing.
func (f *Fetcher) waitNext() bool {
	for f.ctx.Err() == nil {
		f.mu.Lock()
		next := f.st.nextAt
		f.mu.Unlock()
		t := time.NewTimer(max(next.Sub(f.opts.Now()), 0))
		select {
		case <-f.ctx.Done():
			t.Stop()
			return false
		case <-f.kick:
			t.Stop()
		case <-t.C:
			return true
		}
	}
	return false
}

// attempt makes one fetch of the source, publishes its outcome (the set, or
// the last good set kept) and the status, and schedules the next attempt.
// unconditional asks a remote source without validators.
func (f *Fetcher) attempt(ctx context.Context, unconditional bool, answered func()) error {
	f.mu.Lock()
	st := f.st // only the running flight writes f.st
	f.mu.Unlock()
	var err error
	if f.opts.File != "" {
		err = f.attemptFile(&st, answered)
	} else {
		err = f.attemptRemote(ctx, &st, unconditional, answered)
	}
	if ctx.Err() == nil { // a fetch cut short by Close changes nothing worth a line
		f.transition(&st, f.opts.Now(), err)
	}
	f.mu.Lock()
	f.st = st
	status := f.statusLocked()
	f.mu.Unlock()
	f.keys.SetStatus(status)
	f.markReady()
	return err
}
