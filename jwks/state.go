package jwks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/jwksverify/jwksverify/cache"
)

// stateFile is what StateDir holds per issuer: the last good JWKS with its
// validators and the time it was last confirmed by the source.
type stateFile struct {
	Issuer       string          `json:"issuer"`
	Source       string          `json:"source"`
	FetchedAt    time.Time       `json:"fetched_at"`
	ETag         string          `json:"etag,omitempty"`
	LastModified string          `json:"last_modified,omitempty"`
	JWKS         json.RawMessage `json:"jwks"`
	// JWKSURI and IntrospectionEndpoint are what the discovery document
	// (at DiscoveryURL, "" for the issuer's) named, with Discovery: a
	// restart while the document is down fetches the keys from JWKSURI
	// (the transport rule applies again).
	DiscoveryURL          string `json:"discovery_url,omitempty"`
	JWKSURI               string `json:"jwks_uri,omitempty"`
	IntrospectionEndpoint string `json:"introspection_endpoint,omitempty"`
	// Location is [Fetcher.location] of the fetcher that saved it: Source
	// leaves a URL's query out (it may hold a secret), and another query
	// can name other keys (Azure AD B2C's ?p=<policy>).
	Location string `json:"location_sha256,omitempty"`
}

// statePath names the state file of an issuer (or, without issuer, of a
// source): <dir>/<first 16 hex digits of sha256>.json.
func statePath(dir, issuer, source string) string {
	name := issuer
	if name == "" {
		name = source
	}
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(dir, hex.EncodeToString(sum[:])[:16]+".json")
}

// readState reads and decodes a state file, bounded by limit bytes of JWKS.
func readState(path string, limit int64) (stateFile, error) {
	// A regular file only, as a jwks_file: a named pipe held open by a
	// silent writer would block New (the start, a reload) for good. The
	// JWKS is stored verbatim (compacted); allow room for the envelope.
	b, _, err := readFile(path, stateBound(limit))
	if err != nil {
		return stateFile{}, err
	}
	var s stateFile
	if err := json.Unmarshal(b, &s); err != nil {
		return stateFile{}, fmt.Errorf("%w: state file: %w", ErrMalformed, err)
	}
	return s, nil
}

// stateBound is the size of the largest state file readState reads for a
// JWKS of at most limit bytes: the set and 64 KiB for the rest.
func stateBound(limit int64) int64 { return limit + 64<<10 }

// errStateTooLarge is a state file writeState did not write: a restart
// could not read it back.
var errStateTooLarge = errors.New("larger than a restart reads")

// writeState replaces the state file atomically: a private temporary file in
// the same directory, synced, then renamed over the old one. The JWKS is
// written as compacted, without json.Marshal's escaping of "<", ">" and "&"
// (six bytes each), so that a set within limit stays within it. A state
// larger than readState reads for limit (discovered URLs as long as a
// document, validators as long as headers) is not written, and the old file
// is removed: a restart then starts without saved keys, rather than with a
// set older than the last one fetched (keys the provider has withdrawn
// since) or none at all after reading to its bound.
func writeState(path string, s stateFile, limit int64) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if int64(len(b)) > stateBound(limit) {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w (%d bytes); the older state file stays: %w", errStateTooLarge, len(b), err)
		}
		return fmt.Errorf("%w (%d bytes, at most %d); the older state file is removed", errStateTooLarge, len(b), stateBound(limit))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".jwks-state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
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
	case s.Issuer != f.opts.Issuer || s.Source != f.source || !f.savedHere(s) || s.FetchedAt.IsZero():
		f.log.Info("jwks state ignored: another issuer or source", "path", f.statePath)
		return
	}
	switch set, at, out := f.loadSaved(s); out {
	case savedUnusable:
		f.log.Warn("jwks state not loaded: no usable keys", "path", f.statePath)
	case savedTooOld:
		f.log.Info("jwks state ignored: older than stale_for", "path", f.statePath, "fetched_at", at)
	default:
		if f.opts.Discovery && s.DiscoveryURL == f.opts.DiscoveryURL {
			// Where the same document last sent us: discovered again at
			// the first attempt (discoveredAt stays zero), fetched when it
			// cannot be.
			if _, err := parseURL(s.JWKSURI, f.opts.InsecureAllowHTTP); err == nil {
				f.st.jwksURL = s.JWKSURI
			}
			if _, err := parseURL(s.IntrospectionEndpoint, f.opts.InsecureAllowHTTP); err == nil {
				ie := s.IntrospectionEndpoint
				f.introspection.Store(&ie)
			}
		}
		f.log.Info("jwks state loaded", "keys", set.Len(), "fetched_at", at, "usable", set.Usable(f.opts.Now()))
		f.transition(&f.st, f.opts.Now(), nil)
	}
}

// location is a SHA-256 of where f's keys come from in full: the JWKS URL,
// or with discovery the document's URL ("" for the issuer's), query
// included.
func (f *Fetcher) location() string {
	loc := "url\x00" + f.opts.URL
	if f.opts.Discovery {
		loc = "discovery\x00" + f.opts.DiscoveryURL
	}
	sum := sha256.Sum256([]byte(loc))
	return hex.EncodeToString(sum[:])
}

// savedHere reports whether s was saved by a fetcher of f's location. A
// file an older version saved has no Location: its Source is the whole
// URL only when the URL has no query, and with discovery it names its
// document's URL.
func (f *Fetcher) savedHere(s stateFile) bool {
	switch {
	case s.Location != "":
		return s.Location == f.location()
	case f.opts.Discovery:
		return s.DiscoveryURL == f.opts.DiscoveryURL
	default:
		return f.source == f.opts.URL
	}
}

// inherit starts from the last good set of prev, the fetcher this one
// replaces (Options.Previous), as loadState from a file: when prev read
// the same source for the same issuer and has a fetched set of it; with
// discovery from the same document, also from what it discovered. It
// reports whether it published a set.
func (f *Fetcher) inherit(prev *Fetcher) bool {
	if prev == nil || prev.opts.Issuer != f.opts.Issuer || prev.source != f.source || !prev.sourced.Load() ||
		prev.location() != f.location() || prev.opts.TrustDomain != f.opts.TrustDomain {
		return false // source is the URL without its query: compare the whole location
	}
	prev.mu.Lock()
	st := prev.st
	prev.mu.Unlock()
	if st.body == nil || st.lastSuccess.IsZero() || int64(len(st.body)) > f.opts.MaxBytes {
		return false // a file's set (no document kept), or none fetched yet
	}
	set, at, out := f.loadSaved(stateFile{Issuer: f.opts.Issuer, Source: f.source, FetchedAt: st.lastSuccess,
		ETag: st.etag, LastModified: st.lastModified, JWKS: st.body})
	if out != savedLoaded {
		return false
	}
	f.st.etag, f.st.lastModified = validator(st.etag), validator(st.lastModified)
	if f.opts.Discovery && prev.opts.DiscoveryURL == f.opts.DiscoveryURL {
		// What the same document said: the jwks_uri (fetched even while the
		// document is down, so under this fetcher's transport rule, as
		// loadState checks it) and the introspection_endpoint (checked on
		// every call).
		if _, err := parseURL(st.jwksURL, f.opts.InsecureAllowHTTP); err == nil {
			f.st.jwksURL, f.st.discoveredAt = st.jwksURL, st.discoveredAt
		}
		if p := prev.introspection.Load(); p != nil {
			f.introspection.Store(p)
		}
	}
	f.log.Info("jwks keys of the replaced fetcher kept", "keys", set.Len(), "fetched_at", at, "usable", set.Usable(f.opts.Now()))
	// The same source's condition goes on: a reload during an outage is no
	// "ready" (the IdP still fails), its first attempt's failure no second
	// "stale", and the recovery is "recovered", failed_for counted from the
	// outage's start; the failures stay counted (status, backoff).
	f.st.health, f.st.everReady, f.st.failingSince = st.health, st.everReady, st.failingSince
	f.st.failures, f.st.lastErr = st.failures, st.lastErr
	f.keys.SetStatus(f.statusLocked())
	if f.st.health == healthUnknown {
		f.transition(&f.st, f.opts.Now(), nil)
	}
	return true
}

// savedOutcome is what loadSaved did.
type savedOutcome int

const (
	savedLoaded   savedOutcome = iota // published
	savedUnusable                     // no usable key, or more than MaxKeys: refused whole, as in a fetch
	savedTooOld                       // past StaleFor from its fetch time
)

// loadSaved publishes the set s holds, of this issuer and source, with the
// time it was last confirmed (at, never later than now), bounded by
// StaleFor from it; the caller logs the outcome.
func (f *Fetcher) loadSaved(s stateFile) (set *cache.Set, at time.Time, out savedOutcome) {
	doc, err := f.parseDoc(s.JWKS, false, f.keys.Load())
	keys, skipped := doc.keys, doc.skipped
	if err != nil || len(keys) == 0 || doc.extra > 0 {
		return nil, s.FetchedAt, savedUnusable
	}
	at = s.FetchedAt
	if now := f.opts.Now(); at.After(now) {
		at = now // a time in the future must not extend the staleness
	}
	if now := f.opts.Now(); now.After(at.Add(f.opts.StaleFor)) {
		// Past its staleness it would verify nothing, yet it would hide the
		// static keys published alone until the source answers.
		return nil, at, savedTooOld
	}
	set = f.newSet(keys, skipped, at, at.Add(f.opts.StaleFor))
	f.publish(set)
	// No validators: a 304 renews the set held, and a file is not known to
	// hold the body its validators name (anyone who can write state_dir can
	// pair keys of their own with the source's current ETag, which the
	// public JWKS tells). The first fetch asks without them; a body equal
	// to the saved one keeps its keys (bodyHash). inherit, whose set and
	// validators come from a running fetcher, sets them.
	f.st.body, f.st.bodyHash = s.JWKS, sha256.Sum256(s.JWKS)
	f.st.lastSuccess = at
	f.keys.SetStatus(f.statusLocked())
	f.markReady()
	return set, at, savedLoaded
}

// saveState persists the last good set after a success.
func (f *Fetcher) saveState(st *fetchState, now time.Time) {
	if f.statePath == "" || st.body == nil {
		return
	}
	s := stateFile{
		Issuer: f.opts.Issuer, Source: f.source, FetchedAt: now,
		ETag: st.etag, LastModified: st.lastModified, JWKS: st.body, Location: f.location(),
	}
	if f.opts.Discovery {
		s.DiscoveryURL, s.JWKSURI = f.opts.DiscoveryURL, st.jwksURL
		s.IntrospectionEndpoint = f.IntrospectionEndpoint()
	}
	err := writeState(f.statePath, s, f.opts.MaxBytes)
	if err != nil {
		f.log.Warn("jwks state not saved", "path", f.statePath, "err", err.Error())
	}
}
