package jwks

import (
	"context"
	"fmt"
	"time"

	"github.com/jwksverify/jwksverify/cache"
)

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
	doc, err := f.parseDoc(data, local, nil)
	if err != nil {
		return nil, err
	}
	keys, skipped := doc.keys, doc.skipped
	now := f.opts.Now()
	var until time.Time
	if !local {
		until = now.Add(f.opts.StaleFor)
	}
	set := f.newSet(keys, skipped, now, until)
	if len(keys) == 0 {
		return set, fmt.Errorf("%w: %s skipped", ErrNoKeys, nKeys(len(set.Skipped())))
	}
	return set, nil
}
