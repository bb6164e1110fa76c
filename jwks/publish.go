package jwks

import (
	"os"
	"slices"
	"time"

	"github.com/jwksverify/jwksverify/cache"
)

// maxSkippedLogged bounds the "key skipped" log lines of one parse.
const maxSkippedLogged = 10

// fetchState is what a fetch remembers between attempts.
type fetchState struct {
	jwksURL            string // configured or discovered
	discoveredAt       time.Time
	rediscover         bool // discover again at the next attempt (the last one failed)
	etag, lastModified string
	body               []byte // the last good JWKS document (for the state file)
	bodyHash           [32]byte
	hint               time.Duration // a SPIFFE bundle's refresh hint, 0 when none
	file               os.FileInfo   // the file last read, or nil
	fileErr            error         // the outcome of reading it

	lastAttempt, lastSuccess, nextAt time.Time
	lastErr                          string
	failures                         int

	health       health    // what the transition log last said
	everReady    bool      // the issuer has been ready once: a later success is a recovery
	failingSince time.Time // the first failure of the current run of failures
}

// health is an issuer's condition as the transition log lines name it.
type health int

const (
	healthUnknown  health = iota // nothing attempted yet
	healthReady                  // usable keys, the latest attempt succeeded
	healthStale                  // the latest attempt failed; the last good keys still serve
	healthUnusable               // no usable keys: tokens are answered keys_unavailable
)

// transition logs, once each, the issuer becoming ready, stale (serving the
// last good keys), unusable (keys_unavailable) and recovered, after an
// attempt that ended with err at now. Failed attempts in between are the
// "jwks fetch failed" warnings, with their count.
func (f *Fetcher) transition(st *fetchState, now time.Time, err error) {
	set := f.keys.Load()
	usable := f.sourced.Load() && set.Usable(now)
	next := healthReady
	switch {
	case err != nil && usable:
		next = healthStale
	case !usable:
		next = healthUnusable
	}
	if err != nil && st.failingSince.IsZero() {
		st.failingSince = now
	}
	if next == st.health {
		return
	}
	st.health = next
	switch next {
	case healthReady:
		if !st.everReady {
			f.log.Info("jwks issuer ready", "keys", set.Len())
		} else {
			f.log.Info("jwks issuer recovered", "keys", set.Len(), "failed_for", now.Sub(st.failingSince).Round(time.Millisecond).String())
		}
		st.everReady = true
		st.failingSince = time.Time{}
	case healthStale:
		f.log.Warn("jwks issuer stale: serving the last good keys", "err", st.lastErr, "failures", st.failures, "usable_until", set.UsableUntil)
	case healthUnusable:
		f.log.Error("jwks issuer unusable: tokens answered keys_unavailable", "err", st.lastErr, "failures", st.failures)
	}
}

// publishStatic publishes StaticKeys alone, never stale, with a status that
// says so; it releases no Ready waiter (see markReady).
func (f *Fetcher) publishStatic() {
	now := f.opts.Now()
	f.keys.Store(cache.NewSet(f.opts.StaticKeys, nil, now, time.Time{}))
	status := cache.Status{Source: f.source}
	if !f.hasSource() {
		status.LastAttempt, status.LastSuccess = now, now
	}
	f.keys.SetStatus(status)
}

// failed records a failed attempt. Logging can be left to the caller when
// the failure repeats a known one (an unchanged bad file).
func (f *Fetcher) failed(st *fetchState, now time.Time, err error, retry time.Duration, logIt bool) {
	f.stats.Errors.Add(1)
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

// stillFailing records one more attempt that found the failure of the
// last one unchanged (a local file still missing or still bad): not a
// fetch nor a new error, and nothing to log.
func (f *Fetcher) stillFailing(st *fetchState, now time.Time, retry time.Duration) {
	st.failures++
	st.nextAt = now.Add(retry)
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
	f.stats.KeysSkipped.Add(uint64(len(skipped)))
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
	}
}
