package jwks

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jwksverify/jwksverify/internal/redact"
)

// maxValidator bounds an ETag or Last-Modified value kept for revalidation.
const maxValidator = 1024

// attemptRemote discovers the JWKS URL when due, fetches the set and
// records the outcome in st. unconditional leaves out the validators: an
// unknown kid is evidence that the set changed, and a source whose ETag or
// Last-Modified did not change with its body (a Last-Modified of one-second
// granularity, the key added in the second of the last fetch) would answer
// 304 to every conditional request and keep the new key out for good.
func (f *Fetcher) attemptRemote(ctx context.Context, st *fetchState, unconditional bool, answered func()) error {
	start := f.opts.Now()
	var err error
	if f.opts.Discovery && (st.jwksURL == "" || st.rediscover || start.Sub(st.discoveredAt) >= f.opts.MaxInterval) {
		u, derr := f.discover(ctx)
		switch {
		case derr == nil:
			if u != st.jwksURL {
				st.etag, st.lastModified = "", "" // validators belong to one URL
			}
			st.jwksURL, st.discoveredAt, st.rediscover = u, start, false
		case st.jwksURL == "":
			err = derr // no jwks_uri known yet
		default:
			// The document cannot be had now (down, or refused), but the
			// jwks_uri it named last may still serve: fetch it, and try
			// the document again at the next attempt. Without this, a
			// discovery outage would end the keys after stale_for while
			// the JWKS itself is served.
			f.stats.Errors.Add(1)
			st.rediscover = true
			if ctx.Err() == nil {
				f.log.Warn("jwks discovery failed; fetching the last discovered jwks_uri", "err", derr.Error(), "jwks_uri", redact.String(st.jwksURL))
			}
		}
	}
	var resp response
	if err == nil {
		etag, lastModified := st.etag, st.lastModified
		if !f.sourced.Load() || unconditional {
			etag, lastModified = "", "" // a 304 needs a set of the source's to extend
		}
		resp, err = f.get(ctx, st.jwksURL, acceptJWKS, etag, lastModified)
		answered()
	}
	now := f.opts.Now()
	var interval time.Duration
	if err == nil {
		interval, err = f.accept(resp, st, now)
	}
	st.lastAttempt = now
	if err != nil {
		if f.opts.Discovery {
			st.rediscover = true // the jwks_uri may have moved: discover again
		}
		retry := f.backoff(st.failures + 1)
		if ra := (*retryAfterError)(nil); errors.As(err, &ra) {
			// The source asked for a pause (429, 503): no retry before it,
			// within the backoff's own ceiling, MinInterval.
			// Jitter spreads it later, never sooner than the pause.
			pause := min(ra.after, f.opts.MinInterval)
			retry = max(retry, f.jittered(pause), pause)
		}
		// A fetch cut short by Close is not worth a warning.
		f.failed(st, now, err, retry, ctx.Err() == nil)
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
	case resp.notModified && !f.sourced.Load(): // StaticKeys alone are not the source's set
		return 0, fmt.Errorf("%w: 304 Not Modified without a set to keep", ErrStatus)
	case resp.notModified && !sameETag(resp.header.Get("ETag"), resp.etag):
		// A 304 naming another representation than the one asked about
		// confirms nothing (RFC 9111 §4.3.4). Taking its ETag would pin the
		// set held: a correct source answers 304 to that ETag from then on,
		// and a key it removed would keep verifying. Ask again without
		// validators.
		st.etag, st.lastModified = "", ""
		return 0, fmt.Errorf("%w: 304 Not Modified names ETag %q, asked about %q", ErrStatus, clip(resp.header.Get("ETag")), clip(resp.etag))
	case resp.notModified && (resp.etag == "" || resp.header.Get("ETag") == "") &&
		!sameDate(resp.header.Get("Last-Modified"), resp.lastModified):
		// The same for a 304 that no ETag identifies and whose
		// Last-Modified names another date than the one asked about: a
		// source comparing dates (http.ServeContent) answers 304 to a file
		// put back with an older modification time (a rollback that removed
		// a key), and every later refresh would renew the set held.
		st.etag, st.lastModified = "", ""
		return 0, fmt.Errorf("%w: 304 Not Modified names Last-Modified %q, asked about %q", ErrStatus, clip(resp.header.Get("Last-Modified")), clip(resp.lastModified))
	case resp.notModified:
		f.stats.NotModified.Add(1)
		f.publish(cur.WithTimes(now, until))
		f.log.Debug("jwks not modified", "keys", cur.Len())
	case cur != nil && st.body != nil && sha256.Sum256(resp.body) == st.bodyHash:
		f.publish(cur.WithTimes(now, until))
		f.log.Debug("jwks unchanged", "keys", cur.Len())
	default:
		doc, err := f.parseDoc(resp.body, false, cur)
		if err != nil {
			return 0, err
		}
		keys, skipped, extra := doc.keys, doc.skipped, doc.extra
		st.hint = doc.hint
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
			return 0, fmt.Errorf("%w: %s skipped", ErrNoKeys, nKeys(len(set.Skipped())))
		}
		f.publish(set)
		st.body, st.bodyHash = resp.body, sha256.Sum256(resp.body)
		f.log.Info("jwks fetched", "keys", set.Len(), "skipped", len(set.Skipped()))
	}
	lm := resp.header.Get("Last-Modified")
	strong := strongLastModified(lm, resp.header, now)
	if etag := resp.header.Get("ETag"); etag != "" || !resp.notModified {
		st.etag = validator(etag)
	}
	if lm != "" || !resp.notModified {
		st.lastModified = validator(strong)
	}
	if lm != "" && strong == "" {
		// The representation changed within the second the answer was
		// made: an ETag made of the modification second and the size
		// (nginx's, Apache's) stays the same for a change later in that
		// second, as Last-Modified does. Keep neither: the next refresh
		// asks without validators.
		st.etag = ""
	}
	if st.hint > 0 {
		// A SPIFFE bundle's spiffe_refresh_hint rules, not HTTP caching.
		return f.jittered(f.clamp(st.hint)), nil
	}
	return f.interval(resp.header, now), nil
}

// sameETag reports whether a 304's ETag got names the representation
// asked about: true when got is absent, false when got names one and none
// was asked about (the set held came without an ETag, or with one too
// long to keep: RFC 9111 §4.3.4, a 304 with a validator updates only a
// stored response with that validator; taking it would pin the set held,
// as below), else by the weak comparison (RFC 9110 §8.8.3.2).
func sameETag(got, asked string) bool {
	if got == "" {
		return true
	}
	if asked == "" {
		return false
	}
	return strings.TrimPrefix(got, "W/") == strings.TrimPrefix(asked, "W/")
}

// sameDate reports whether a 304's Last-Modified got names the date asked
// about (If-Modified-Since): true when either is absent, else when both
// parse to the same instant (or, unparsable, are the same text).
func sameDate(got, asked string) bool {
	if got == "" || asked == "" {
		return true
	}
	g, gerr := http.ParseTime(got)
	a, aerr := http.ParseTime(asked)
	if gerr != nil || aerr != nil {
		return got == asked
	}
	return g.Equal(a)
}

// strongLastModified returns lm when it may serve as a validator, else "".
// Last-Modified has one-second granularity: a representation changed later
// in the second it names keeps it, and a source comparing dates (Go's
// http.ServeContent, a file's mtime) answers 304 to every If-Modified-Since
// from then on. RFC 9110 §8.8.2.2 lets a client take it as strong only when
// the response's Date (here, without one, the time it was received) is at
// least one second after it; a date later than that (§8.8.2.1) is none.
func strongLastModified(lm string, h http.Header, received time.Time) string {
	if lm == "" {
		return ""
	}
	at, err := http.ParseTime(lm)
	if err != nil {
		return ""
	}
	date := received
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		date = d
	}
	if date.Sub(at) < time.Second {
		return ""
	}
	return lm
}

func validator(v string) string {
	if len(v) > maxValidator {
		return ""
	}
	return v
}

// interval is the refresh interval a response grants: its caching lifetime
// (DefaultTTL when it says nothing), clamped, with jitter.
func (f *Fetcher) interval(h http.Header, now time.Time) time.Duration {
	d, ok := cacheLifetime(h, now)
	if !ok {
		d = f.opts.DefaultTTL
	}
	return f.jittered(f.clamp(d))
}

// clamp bounds a refresh interval to [MinInterval, MaxInterval], and then to
// half of StaleFor, which wins over MinInterval: the set a success publishes
// goes stale StaleFor after it, so a healthy source must be asked again
// well before that (with half of StaleFor left for retries), whatever its
// caching headers say and however the options relate.
func (f *Fetcher) clamp(d time.Duration) time.Duration {
	return min(max(d, f.opts.MinInterval), f.opts.MaxInterval, f.opts.StaleFor/2)
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
