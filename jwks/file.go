package jwks

import (
	"fmt"
	"os"
	"time"

	"github.com/jwksverify/jwksverify/internal/fileread"
	"github.com/jwksverify/jwksverify/internal/filestamp"
)

// attemptFile reads the key file when it changed and records the outcome
// in st; an unchanged file keeps the outcome of its last read.
//
// What the counters and the log say of a file: a read (the file is new,
// changed or back) is a fetch, and a failed one an error, logged once; a
// missing file is one failed fetch, logged once with its path, and again
// only when the failure changes. A poll that finds nothing changed is
// neither: it confirms the keys of a good file (the set's FetchedAt, the
// age metric), and counts one more consecutive failure of a bad one.
func (f *Fetcher) attemptFile(st *fetchState, answered func()) error {
	poll := f.opts.FilePollInterval
	fi, err := os.Stat(f.opts.File)
	answered()
	now := f.opts.Now()
	st.lastAttempt = now
	switch {
	case err != nil:
		st.file = nil // read it again when it comes back
		if err.Error() == st.lastErr {
			f.stillFailing(st, now, poll)
			return err
		}
		f.stats.Fetches.Add(1) // a read of a file that is not there
		f.failed(st, now, err, poll, true)
		return err
	case st.file != nil && filestamp.Same(st.file, fi):
		if err = st.fileErr; err != nil { // unchanged: the last read stands
			f.stillFailing(st, now, poll)
			return err
		}
		if cur := f.keys.Load(); f.sourced.Load() {
			f.publish(cur.WithTimes(now, time.Time{}))
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
	f.stats.Fetches.Add(1)
	data, fi, err := readFile(f.opts.File, f.opts.MaxBytes)
	if err != nil {
		return fi, err
	}
	doc, err := f.parseDoc(data, true, f.keys.Load())
	if err != nil {
		return fi, err
	}
	keys, skipped := doc.keys, doc.skipped
	// Keys from a local file never go stale: the file is the source of truth
	// and is not subject to an IdP outage.
	set := f.newSet(keys, skipped, now, time.Time{})
	f.reportSkipped(set.Skipped())
	if len(keys) == 0 {
		return fi, fmt.Errorf("%w: %s skipped", ErrNoKeys, nKeys(len(set.Skipped())))
	}
	f.publish(set)
	f.log.Info("jwks file loaded", "keys", set.Len(), "skipped", len(set.Skipped()))
	return fi, nil
}

// readFile reads a regular file of at most limit bytes.
func readFile(path string, limit int64) ([]byte, os.FileInfo, error) {
	fh, err := fileread.Open(path) // a named pipe: opened without waiting, then refused below
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
