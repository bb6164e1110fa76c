package jwks

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/jwksverify/jwksverify/cache"
)

// maxValidator bounds an ETag or Last-Modified value kept for revalidation.
const maxValidator = 1024

// maxRememberedKid bounds the length of a kid remembered as missing: kids
// come from tokens, and real ones are short (27 to 43 characters at the
// major IdPs). A longer absent kid is not remembered; the budget still
// bounds what it costs.
const maxRememberedKid = 256

// maxSkippedLogged bounds the "key skipped" log lines of one parse.
const maxSkippedLogged = 10

// Fetcher keeps one issuer's key set fresh in the background. It owns one
// goroutine, started by New and stopped by Close, plus at most one fetch in
// flight at a time. It is safe for concurrent use.
//
// Every fetch — the start-up fetch, a periodic refresh, a retry or an
// unknown-kid refresh — is one shared flight: a caller that arrives while a
// flight is running joins it instead of starting another, so the source sees
// at most one request (plus discovery) at a time.
type Fetcher struct {
	opts      Options // defaults applied
	keys      *cache.Keys
	client    *http.Client
	transport *http.Transport     // owned (closed by Close), or nil for a caller's client
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
	stats    counters

	mu          sync.Mutex
	closed      bool
	cur         *flight // the flight in progress, or nil
	seq         uint64  // names flights: each has its own singleflight key
	lastUnknown time.Time
	st          fetchState // written only by the running flight
}

// flight is one fetch in progress, shared by every caller that joins it.
type flight struct {
	key  string
	fn   func() (any, error)
	kids map[string]struct{} // unknown kids asked for during the flight
}

// counters back [cache.FetchStats].
type counters struct {
	fetches, notModified, errors, keysSkipped, unknownKid, suppressed atomic.Uint64
}

// fetchState is what a fetch remembers between attempts.
type fetchState struct {
	jwksURL            string // configured or discovered
	discoveredAt       time.Time
	etag, lastModified string
	body               []byte // the last good JWKS document (for the state file)
	bodyHash           [32]byte
	file               os.FileInfo // the file last read, or nil
	fileErr            error       // the outcome of reading it

	lastAttempt, lastSuccess, nextAt time.Time
	lastErr                          string
	failures                         int
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
	if f.opts.StateDir != "" && f.opts.File == "" {
		if err := os.MkdirAll(f.opts.StateDir, 0o700); err != nil {
			f.closeIdle()
			return nil, fmt.Errorf("%w: state_dir: %w", ErrInvalidOptions, err)
		}
		f.statePath = statePath(f.opts.StateDir, f.opts.Issuer, f.source)
		f.loadState()
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

// publishStatic publishes StaticKeys alone, never stale, with a status that
// says so; it releases no Ready waiter (see markReady).
func (f *Fetcher) publishStatic() {
	now := f.opts.Now()
	f.keys.Store(cache.NewSet(f.opts.StaticKeys, nil, now, time.Time{}))
	status := cache.Status{Source: f.source, Stats: f.Stats()}
	if !f.hasSource() {
		status.LastAttempt, status.LastSuccess = now, now
	}
	f.keys.SetStatus(status)
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
		f.source = redactString(o.URL)
		f.st.jwksURL = o.URL
	default:
		f.source = "static"
	}
	if o.URL != "" || o.Discovery {
		f.client, f.transport = newClient(o)
	}
	f.log = o.Logger.With("source", f.source)
	if o.Issuer != "" {
		f.log = f.log.With("issuer", o.Issuer)
	}
	return f, nil
}

// withDefaults validates o and fills its zero values.
func (o Options) withDefaults() (Options, error) {
	invalid := func(format string, args ...any) (Options, error) {
		return Options{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
	}
	sources := 0
	for _, set := range []bool{o.URL != "", o.Discovery, o.File != ""} {
		if set {
			sources++
		}
	}
	switch {
	case sources > 1:
		return invalid("at most one of URL, Discovery and File may be set")
	case sources == 0 && len(o.StaticKeys) == 0:
		return invalid("one of URL, Discovery, File or StaticKeys must be set")
	}
	kids := make(map[string]bool, len(o.StaticKeys))
	for i, k := range o.StaticKeys {
		switch {
		case k == nil:
			return invalid("StaticKeys[%d] is nil", i)
		case k.Kid != "" && kids[k.Kid]:
			return invalid("StaticKeys[%d]: kid %q is held by another static key", i, clip(k.Kid))
		}
		kids[k.Kid] = true
	}
	o.StaticKeys = slices.Clone(o.StaticKeys)
	if o.URL != "" {
		if _, err := parseURL(o.URL, o.InsecureAllowHTTP); err != nil {
			return invalid("URL: %w", err)
		}
	}
	if o.Discovery {
		if o.Issuer == "" {
			return invalid("Discovery needs Issuer")
		}
		if _, err := parseURL(o.Issuer, o.InsecureAllowHTTP); err != nil {
			return invalid("Issuer: %w", err)
		}
	}
	durations := []struct {
		name  string
		p     *time.Duration
		def   time.Duration
		floor time.Duration
	}{
		{"FetchTimeout", &o.FetchTimeout, DefaultFetchTimeout, time.Nanosecond},
		{"MinInterval", &o.MinInterval, DefaultMinInterval, MinAnyInterval},
		{"MaxInterval", &o.MaxInterval, DefaultMaxInterval, MinAnyInterval},
		{"DefaultTTL", &o.DefaultTTL, DefaultTTL, MinAnyInterval},
		{"UnknownKidInterval", &o.UnknownKidInterval, DefaultUnknownKidInterval, MinAnyInterval},
		{"StaleFor", &o.StaleFor, DefaultStaleFor, MinAnyInterval},
		{"FilePollInterval", &o.FilePollInterval, DefaultFilePollInterval, MinAnyInterval},
	}
	for _, d := range durations {
		switch {
		case *d.p == 0:
			*d.p = d.def
		case *d.p < d.floor:
			return invalid("%s %v is below %v", d.name, *d.p, d.floor)
		}
	}
	if o.MinInterval > o.MaxInterval {
		return invalid("MinInterval %v exceeds MaxInterval %v", o.MinInterval, o.MaxInterval)
	}
	switch {
	case o.MaxBytes < 0 || o.MaxKeys < 0:
		return invalid("negative MaxBytes or MaxKeys")
	case o.MaxBytes == 0:
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxKeys == 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.Keys == nil {
		o.Keys = new(cache.Keys)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewTimer == nil {
		o.NewTimer = func(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

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

func (f *Fetcher) closeIdle() {
	if f.transport != nil {
		f.transport.CloseIdleConnections()
	}
}

// Stats returns the fetcher's counters. It does not block.
func (f *Fetcher) Stats() cache.FetchStats {
	return cache.FetchStats{
		Fetches:             f.stats.fetches.Load(),
		NotModified:         f.stats.notModified.Load(),
		Errors:              f.stats.errors.Load(),
		KeysSkipped:         f.stats.keysSkipped.Load(),
		UnknownKidRefreshes: f.stats.unknownKid.Load(),
		SuppressedRefreshes: f.stats.suppressed.Load(),
	}
}

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
// It never waits for a budget. Under the fetcher's lock it either joins the
// flight in progress, or returns [ErrSuppressed] at once (the kid was proven
// absent within UnknownKidInterval, or an unknown-kid refresh already started
// within UnknownKidInterval), or reserves the budget and starts a flight. The
// flight runs under the fetcher's lifetime, not ctx: the caller waits for it
// only as long as ctx allows. It returns nil when a refresh completed (the
// caller reloads the set; the kid may still be absent) or when the current
// set already holds kid, and the fetch error when the refresh failed. After
// a successful flight, the kids asked for during it that are still absent are
// remembered as missing for UnknownKidInterval.
func (f *Fetcher) RefreshUnknownKid(ctx context.Context, kid string) error {
	if _, ok := f.keys.Load().Lookup(kid); ok {
		return nil // a refresh since the caller looked already brought it
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return ErrClosed
	}
	if !f.hasSource() {
		f.mu.Unlock()
		return fmt.Errorf("%w: static keys only, no source to refresh", ErrSuppressed)
	}
	now := f.opts.Now()
	fl := f.cur
	switch {
	case fl != nil:
		// Join: the fetch in progress is as fresh as a new one would be.
	case f.keys.RecentlyMissing(kid, now):
		f.mu.Unlock()
		f.stats.suppressed.Add(1)
		return fmt.Errorf("%w: kid was absent from a refresh moments ago", ErrSuppressed)
	case !f.lastUnknown.IsZero() && now.Sub(f.lastUnknown) < f.opts.UnknownKidInterval:
		f.mu.Unlock()
		f.stats.suppressed.Add(1)
		return fmt.Errorf("%w: one unknown-kid refresh per %v", ErrSuppressed, f.opts.UnknownKidInterval)
	default:
		f.lastUnknown = now
		f.stats.unknownKid.Add(1)
		fl = f.startLocked()
	}
	if len(fl.kids) < cache.MaxMissing && len(kid) <= maxRememberedKid {
		fl.kids[kid] = struct{}{}
	}
	ch := f.sf.DoChan(fl.key, fl.fn)
	f.mu.Unlock()
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		return fmt.Errorf("jwks: waiting for the key refresh: %w", context.Cause(ctx))
	}
}

// startLocked prepares a new flight; the caller must start it with
// f.sf.DoChan(fl.key, fl.fn) before releasing f.mu.
func (f *Fetcher) startLocked() *flight {
	f.seq++
	fl := &flight{key: strconv.FormatUint(f.seq, 10), kids: make(map[string]struct{})}
	f.flights.Add(1)
	fl.fn = func() (any, error) {
		defer f.flights.Done()
		err := f.attempt(f.ctx)
		f.mu.Lock()
		if err == nil && len(fl.kids) > 0 {
			set, until := f.keys.Load(), f.opts.Now().Add(f.opts.UnknownKidInterval)
			for kid := range fl.kids {
				if _, ok := set.Lookup(kid); !ok {
					f.keys.RememberMissing(kid, until)
				}
			}
		}
		f.cur = nil
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
	if f.closed {
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
		t := f.opts.NewTimer(max(next.Sub(f.opts.Now()), 0))
		select {
		case <-f.ctx.Done():
			t.Stop()
			return false
		case <-f.kick:
			t.Stop()
		case <-t.C():
			return true
		}
	}
	return false
}

// attempt makes one fetch of the source, publishes its outcome (the set, or
// the last good set kept) and the status, and schedules the next attempt.
func (f *Fetcher) attempt(ctx context.Context) error {
	f.mu.Lock()
	st := f.st // only the running flight writes f.st
	f.mu.Unlock()
	var err error
	if f.opts.File != "" {
		err = f.attemptFile(&st)
	} else {
		err = f.attemptRemote(ctx, &st)
	}
	f.mu.Lock()
	f.st = st
	status := f.statusLocked()
	f.mu.Unlock()
	f.keys.SetStatus(status)
	f.markReady()
	return err
}

func (f *Fetcher) attemptRemote(ctx context.Context, st *fetchState) error {
	start := f.opts.Now()
	var err error
	if f.opts.Discovery && (st.jwksURL == "" || start.Sub(st.discoveredAt) >= f.opts.MaxInterval) {
		var u string
		if u, err = f.discover(ctx); err == nil {
			if u != st.jwksURL {
				st.etag, st.lastModified = "", "" // validators belong to one URL
			}
			st.jwksURL, st.discoveredAt = u, start
		}
	}
	var resp response
	if err == nil {
		etag, lastModified := st.etag, st.lastModified
		if f.keys.Load() == nil {
			etag, lastModified = "", "" // a 304 needs a set to extend
		}
		resp, err = f.get(ctx, st.jwksURL, acceptJWKS, etag, lastModified)
	}
	now := f.opts.Now()
	var interval time.Duration
	if err == nil {
		interval, err = f.accept(resp, st, now)
	}
	st.lastAttempt = now
	if err != nil {
		if f.opts.Discovery {
			st.jwksURL = "" // the jwks_uri may have moved: discover again
		}
		// A fetch cut short by Close is not worth a warning.
		f.failed(st, now, err, f.backoff(st.failures+1), ctx.Err() == nil)
		return err
	}
	st.failures, st.lastErr, st.lastSuccess, st.nextAt = 0, "", now, now.Add(interval)
	f.saveState(st, now)
	return nil
}

// accept publishes a fetched answer and returns the refresh interval it grants.
func (f *Fetcher) accept(resp response, st *fetchState, now time.Time) (time.Duration, error) {
	cur := f.keys.Load()
	until := now.Add(f.opts.StaleFor)
	switch {
	case resp.notModified && cur == nil:
		return 0, fmt.Errorf("%w: 304 Not Modified without a set to keep", ErrStatus)
	case resp.notModified:
		f.stats.notModified.Add(1)
		f.publish(cur.WithTimes(now, until))
		f.log.Debug("jwks not modified", "keys", cur.Len())
	case cur != nil && st.body != nil && sha256.Sum256(resp.body) == st.bodyHash:
		f.publish(cur.WithTimes(now, until))
		f.log.Debug("jwks unchanged", "keys", cur.Len())
	default:
		keys, skipped, extra, err := parse(resp.body, ParseOptions{MaxKeys: f.opts.MaxKeys, Previous: cur, static: f.staticKid})
		if err != nil {
			return 0, err
		}
		if extra > 0 {
			// A set cut at MaxKeys would drop whichever keys come last —
			// perhaps the one in use — and reject valid tokens at once.
			// Refuse it whole, like a body over MaxBytes: the last good
			// set keeps serving and the failure shows.
			return 0, fmt.Errorf("%w: more than %d keys (%d beyond the limit)", ErrTooLarge, f.opts.MaxKeys, extra)
		}
		set := f.newSet(keys, skipped, now, until)
		f.reportSkipped(set.Skipped())
		if len(keys) == 0 {
			return 0, fmt.Errorf("%w: %d keys skipped", ErrNoKeys, len(set.Skipped()))
		}
		f.publish(set)
		st.body, st.bodyHash = resp.body, sha256.Sum256(resp.body)
		f.log.Info("jwks fetched", "keys", set.Len(), "skipped", len(set.Skipped()))
	}
	if etag := resp.header.Get("ETag"); etag != "" || !resp.notModified {
		st.etag = validator(etag)
	}
	if lm := resp.header.Get("Last-Modified"); lm != "" || !resp.notModified {
		st.lastModified = validator(lm)
	}
	return f.interval(resp.header, now), nil
}

func validator(v string) string {
	if len(v) > maxValidator {
		return ""
	}
	return v
}

// failed records a failed attempt. Logging can be left to the caller when
// the failure repeats a known one (an unchanged bad file).
func (f *Fetcher) failed(st *fetchState, now time.Time, err error, retry time.Duration, logIt bool) {
	f.stats.errors.Add(1)
	st.failures++
	st.lastErr = err.Error()
	st.nextAt = now.Add(retry)
	if !logIt {
		return
	}
	attrs := []any{"err", st.lastErr, "failures", st.failures, "retry_in", retry.Round(time.Millisecond).String()}
	if set := f.keys.Load(); set != nil {
		attrs = append(attrs, "usable", set.Usable(now), "usable_until", set.UsableUntil)
	}
	f.log.Warn("jwks fetch failed", attrs...)
}

func (f *Fetcher) attemptFile(st *fetchState) error {
	poll := f.opts.FilePollInterval
	fi, err := os.Stat(f.opts.File)
	now := f.opts.Now()
	st.lastAttempt = now
	switch {
	case err != nil:
		st.file = nil // read it again when it comes back
	case st.file != nil && sameFile(st.file, fi):
		err = st.fileErr // unchanged: the last read stands
		if err != nil {
			f.failed(st, now, err, poll, false)
			return err
		}
		st.failures, st.lastErr, st.lastSuccess, st.nextAt = 0, "", now, now.Add(poll)
		return nil
	default:
		st.file, err = f.loadFile(now)
		st.fileErr = err
	}
	if err != nil {
		f.failed(st, now, err, poll, err.Error() != st.lastErr)
		return err
	}
	st.failures, st.lastErr, st.lastSuccess, st.nextAt = 0, "", now, now.Add(poll)
	return nil
}

// loadFile reads and publishes the key file. It returns the FileInfo of what
// it read, for change detection, even when the content is refused.
func (f *Fetcher) loadFile(now time.Time) (os.FileInfo, error) {
	f.stats.fetches.Add(1)
	data, fi, err := readFile(f.opts.File, f.opts.MaxBytes)
	if err != nil {
		return fi, err
	}
	keys, skipped, _, err := parse(data, ParseOptions{Local: true, MaxKeys: f.opts.MaxKeys, Previous: f.keys.Load(), static: f.staticKid})
	if err != nil {
		return fi, err
	}
	// Keys from a local file never go stale: the file is the source of truth
	// and is not subject to an IdP outage.
	set := f.newSet(keys, skipped, now, time.Time{})
	f.reportSkipped(set.Skipped())
	if len(keys) == 0 {
		return fi, fmt.Errorf("%w: %d keys skipped", ErrNoKeys, len(set.Skipped()))
	}
	f.publish(set)
	f.log.Info("jwks file loaded", "keys", set.Len(), "skipped", len(set.Skipped()))
	return fi, nil
}

// readFile reads a regular file of at most limit bytes.
func readFile(path string, limit int64) ([]byte, os.FileInfo, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("jwks: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("jwks: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, fmt.Errorf("%w: %s is not a regular file", ErrMalformed, path)
	}
	data, err := readBounded(fh, fi.Size(), limit)
	if err != nil {
		return nil, fi, fmt.Errorf("jwks: %s: %w", path, err)
	}
	return data, fi, nil
}

func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// newSet builds a set to publish from the source's keys: StaticKeys first,
// then keys (from which parse has left out those whose kid a static key
// holds).
func (f *Fetcher) newSet(keys []*cache.Key, skipped []cache.Skipped, fetchedAt, usableUntil time.Time) *cache.Set {
	if len(f.opts.StaticKeys) > 0 {
		keys = append(slices.Clone(f.opts.StaticKeys), keys...)
	}
	return cache.NewSet(keys, skipped, fetchedAt, usableUntil)
}

// publish stores set, which holds the source's keys. The caller publishes
// the status next and then calls markReady, so that whoever Ready releases
// sees the set and its status.
func (f *Fetcher) publish(set *cache.Set) {
	f.keys.Store(set)
	f.sourced.Store(true)
}

// markReady releases Ready's waiters once a published set of the source's
// keys is usable (StaticKeys published alone at start do not count).
func (f *Fetcher) markReady() {
	if f.sourced.Load() && f.keys.Load().Usable(f.opts.Now()) {
		f.readyOne.Do(func() { close(f.ready) })
	}
}

func (f *Fetcher) reportSkipped(skipped []cache.Skipped) {
	if len(skipped) == 0 {
		return
	}
	f.stats.keysSkipped.Add(uint64(len(skipped)))
	for i, s := range skipped {
		if i == maxSkippedLogged {
			f.log.Warn("jwks keys skipped", "more", len(skipped)-i)
			break
		}
		f.log.Warn("jwks key skipped", "index", s.Index, "kid", s.Kid, "kty", s.Kty, "reason", s.Reason)
	}
}

// statusLocked renders the published status; f.mu must be held.
func (f *Fetcher) statusLocked() cache.Status {
	return cache.Status{
		Source:              f.source,
		LastAttempt:         f.st.lastAttempt,
		LastSuccess:         f.st.lastSuccess,
		NextRefresh:         f.st.nextAt,
		LastError:           f.st.lastErr,
		ConsecutiveFailures: f.st.failures,
		Stats:               f.Stats(),
	}
}

// interval is the refresh interval a response grants: its caching lifetime
// clamped to [MinInterval, MaxInterval] (DefaultTTL when it says nothing),
// with jitter.
func (f *Fetcher) interval(h http.Header, now time.Time) time.Duration {
	d, ok := cacheLifetime(h, now)
	if !ok {
		d = f.opts.DefaultTTL
	}
	return f.jittered(min(max(d, f.opts.MinInterval), f.opts.MaxInterval))
}

// backoff is the retry delay after the n-th consecutive failure: 1s, 2s,
// 4s, … capped at MinInterval, with jitter.
func (f *Fetcher) backoff(n int) time.Duration {
	d := f.opts.MinInterval
	if n-1 < 32 {
		d = min(time.Second<<(n-1), d)
	}
	return f.jittered(d)
}

// jittered spreads d by ±10%, so that many verifiers do not refresh in step.
func (f *Fetcher) jittered(d time.Duration) time.Duration {
	j := f.opts.Jitter()
	if !(j >= 0 && j < 1) {
		j = 0.5
	}
	return time.Duration(float64(d) * (0.9 + 0.2*j))
}

// loadState publishes the persisted set, if there is one for this issuer
// and source, with the time it was last confirmed: bounded staleness holds
// across restarts.
func (f *Fetcher) loadState() {
	s, err := readState(f.statePath, f.opts.MaxBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		f.log.Warn("jwks state not loaded", "path", f.statePath, "err", err.Error())
		return
	case s.Issuer != f.opts.Issuer || s.Source != f.source || s.FetchedAt.IsZero():
		f.log.Info("jwks state ignored: another issuer or source", "path", f.statePath)
		return
	}
	keys, skipped, _, err := parse(s.JWKS, ParseOptions{MaxKeys: f.opts.MaxKeys, Previous: f.keys.Load(), static: f.staticKid})
	if err != nil || len(keys) == 0 {
		f.log.Warn("jwks state not loaded: no usable keys", "path", f.statePath)
		return
	}
	at := s.FetchedAt
	if now := f.opts.Now(); at.After(now) {
		at = now // a time in the future must not extend the staleness
	}
	set := f.newSet(keys, skipped, at, at.Add(f.opts.StaleFor))
	f.publish(set)
	f.st.etag, f.st.lastModified = validator(s.ETag), validator(s.LastModified)
	f.st.body, f.st.bodyHash = s.JWKS, sha256.Sum256(s.JWKS)
	f.st.lastSuccess = at
	f.keys.SetStatus(f.statusLocked())
	f.markReady()
	f.log.Info("jwks state loaded", "keys", set.Len(), "fetched_at", at, "usable", set.Usable(f.opts.Now()))
}

// saveState persists the last good set after a success.
func (f *Fetcher) saveState(st *fetchState, now time.Time) {
	if f.statePath == "" || st.body == nil {
		return
	}
	err := writeState(f.statePath, stateFile{
		Issuer: f.opts.Issuer, Source: f.source, FetchedAt: now,
		ETag: st.etag, LastModified: st.lastModified, JWKS: st.body,
	})
	if err != nil {
		f.log.Warn("jwks state not saved", "path", f.statePath, "err", err.Error())
	}
}

// Fetch reads the key set once from opts' source, without starting a
// background loop, persisting or loading state (for the CLI). The set
// includes the skipped keys and StaticKeys, merged as [New] merges them
// (with no source, the static keys alone). When the source yields no usable
// key it returns the set (so the skipped keys can be reported) together
// with an error wrapping [ErrNoKeys]. Remote sets are usable for StaleFor;
// file and static sets never go stale.
func Fetch(ctx context.Context, opts Options) (*cache.Set, error) {
	f, err := build(opts)
	if err != nil {
		return nil, err
	}
	defer f.closeIdle()
	if !f.hasSource() {
		return f.newSet(nil, nil, f.opts.Now(), time.Time{}), nil
	}
	var data []byte
	local := f.opts.File != ""
	if local {
		data, _, err = readFile(f.opts.File, f.opts.MaxBytes)
	} else {
		u := f.opts.URL
		if f.opts.Discovery {
			u, err = f.discover(ctx)
		}
		if err == nil {
			var resp response
			resp, err = f.get(ctx, u, acceptJWKS, "", "")
			data = resp.body
		}
	}
	if err != nil {
		return nil, err
	}
	keys, skipped, _, err := parse(data, ParseOptions{Local: local, MaxKeys: f.opts.MaxKeys, static: f.staticKid})
	if err != nil {
		return nil, err
	}
	now := f.opts.Now()
	var until time.Time
	if !local {
		until = now.Add(f.opts.StaleFor)
	}
	set := f.newSet(keys, skipped, now, until)
	if len(keys) == 0 {
		return set, fmt.Errorf("%w: %d keys skipped", ErrNoKeys, len(set.Skipped()))
	}
	return set, nil
}
