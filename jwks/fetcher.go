package jwks

import (
	"context"
	"errors"

	"github.com/jwksverify/jwksverify/cache"
)

// Fetcher keeps one issuer's key set fresh in the background. It owns one
// goroutine, started by New and stopped by Close. It is safe for concurrent use.
type Fetcher struct {
	opts Options
}

// New validates opts, loads the persisted set if StateDir holds one, and
// starts the background refresh loop, whose first fetch starts at once.
func New(opts Options) (*Fetcher, error) { return nil, errors.New("jwks: not implemented yet") }

// Keys returns the cache.Keys the fetcher publishes into.
func (f *Fetcher) Keys() *cache.Keys { return f.opts.Keys }

// Close stops the background loop and waits for it and any in-flight fetch.
func (f *Fetcher) Close() error { return nil }

// Stats returns the fetcher's counters.
func (f *Fetcher) Stats() cache.FetchStats { return cache.FetchStats{} }

// Ready blocks until a first usable set is published or ctx is done.
func (f *Fetcher) Ready(ctx context.Context) error { return ctx.Err() }

// RefreshUnknownKid implements verify.Refresher.
func (f *Fetcher) RefreshUnknownKid(ctx context.Context, kid string) error {
	return errors.New("jwks: not implemented yet")
}

// ParseOptions configure [Parse].
type ParseOptions struct {
	// Local marks keys as coming from local configuration: oct keys are accepted.
	Local bool
	// MaxKeys bounds the keys read. Zero means DefaultMaxKeys.
	MaxKeys int
}

// Parse reads a JWKS document: each key is parsed on its own, and a key that
// is broken, unsupported or refused is skipped and reported, never failing
// the set. It returns an error only when the document itself is unusable.
func Parse(data []byte, opts ParseOptions) ([]*cache.Key, []cache.Skipped, error) {
	return nil, nil, errors.New("jwks: not implemented yet")
}

// Fetch reads the key set once from opts' source, without starting a
// background loop (for the CLI).
func Fetch(ctx context.Context, opts Options) (*cache.Set, error) {
	return nil, errors.New("jwks: not implemented yet")
}
