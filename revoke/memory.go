package revoke

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/jwksverify/jwksverify/internal/fileread"
)

// MemoryFile is the name of the memory store's log in its directory.
const MemoryFile = "revocations.log"

// MemoryOptions configure a [Memory] store.
type MemoryOptions struct {
	// Dir is the directory of the store's log (state_dir). Required: an
	// entry is acknowledged only once it is written there.
	Dir string
	// Retention is how long an entry lives. Required (positive).
	Retention time.Duration
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// Memory is the store of one process: entries in memory ([Index]), each
// change appended to a log in Dir and fsync'd before Add or Delete
// returns, the log read back (and compacted) by [OpenMemory]. An entry
// added or lifted stays so across restarts. It is safe for concurrent use;
// Close it when done.
type Memory struct {
	opts MemoryOptions
	idx  *Index

	mu     sync.Mutex // serializes writes to f
	f      *os.File   // nil once closed
	lock   *os.File   // MemoryLock, flock'd while the store is open
	size   int64      // bytes of f that hold whole records
	broken error      // a failed write that could not be undone: every write fails
	lines  int        // records in the log
	base   int        // records in the log when it was last rewritten
	counts counts
}

// MemoryLock is the file a memory store holds locked (flock) in its
// directory while it is open: a second store on the same directory, in
// this process or another, is refused instead of rewriting the log under
// the first (whose later acknowledged writes went to a file no longer in
// the directory).
const MemoryLock = "revocations.lock"

// record is one line of the log.
type record struct {
	Op    string `json:"op"` // "add" or "delete"
	Entry *Entry `json:"entry,omitempty"`
	ID    string `json:"id,omitempty"`
}

// OpenMemory reads the log in o.Dir (creating the directory and the log
// when absent), keeps the entries live at now, rewrites the log with them
// and those expired for less than a retention (atomically: a temporary
// file, fsync, rename; a start while the clock is ahead erases nothing)
// and returns the store.
// A log line that does not decode fails it, but a last line cut short by a
// crash, which was never acknowledged.
func OpenMemory(o MemoryOptions) (*Memory, error) {
	if o.Dir == "" {
		return nil, errors.New("revoke: the memory store needs a directory (state_dir)")
	}
	if o.Retention <= 0 {
		return nil, errors.New("revoke: retention must be positive")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("revoke: %w", err)
	}
	lock, err := lockDir(o.Dir)
	if err != nil {
		return nil, err
	}
	m := &Memory{opts: o, idx: NewIndex(0), lock: lock}
	// The index holds what the log holds (keptInLog): a clock stepped
	// ahead and back again, while running or across this start, loses
	// nothing the store acknowledged.
	m.idx.keep = o.Retention
	path := filepath.Join(o.Dir, MemoryFile)
	es, err := readLog(path)
	if err != nil {
		lock.Close()
		return nil, err
	}
	now := o.Now()
	for i := range es {
		es[i] = atLeastRetention(es[i], o.Retention)
	}
	m.idx.Replace(es, now)
	kept := keptInLog(es, now, o.Retention)
	if err := writeLog(path, kept); err != nil {
		lock.Close()
		return nil, err
	}
	if m.f, m.size, err = openLog(path); err != nil {
		lock.Close()
		return nil, fmt.Errorf("revoke: %w", err)
	}
	m.lines, m.base = len(kept), len(kept)
	return m, nil
}

// CheckMemory reports what [OpenMemory] would refuse of o without opening
// the store: its options and every line of the log in o.Dir. The log is
// read only: not locked (a running store may hold the lock), not
// rewritten. A directory or log not there yet is no problem: OpenMemory
// creates them.
func CheckMemory(o MemoryOptions) error {
	if o.Dir == "" {
		return errors.New("revoke: the memory store needs a directory (state_dir)")
	}
	if o.Retention <= 0 {
		return errors.New("revoke: retention must be positive")
	}
	_, err := readLog(filepath.Join(o.Dir, MemoryFile))
	return err
}

// keptInLog returns the entries of es that a rewrite of the log keeps:
// those expired at now for less than retention too. Only the live ones are
// enforced, but a start (or a compaction) while the clock is ahead must
// not erase the entries it takes for expired: once the clock is right
// again, the tokens they revoke are within their lifetime, and the next
// start reads the entries back.
func keptInLog(es []Entry, now time.Time, retention time.Duration) []Entry {
	cut := now.Add(-retention)
	out := make([]Entry, 0, len(es))
	for _, e := range es {
		if e.ExpiresAt.After(cut) {
			out = append(out, e)
		}
	}
	return out
}

// lockDir locks MemoryLock in dir, or fails when another store holds it.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, MemoryLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("revoke: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("revoke: %s is in use by another memory store (another jwksverify on the same state_dir?): %w", dir, err)
	}
	return f, nil
}

// openLog opens the log at path for appending, with its size.
func openLog(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// WriteMemoryLog replaces the log of a memory store in dir (creating dir,
// mode 0700, when absent) with es, each checked ([Check]) and completed as
// [Memory.Add] completes it at now with retention: an ID, CreatedAt,
// ExpiresAt, IssuedBefore. It writes the compacted form [OpenMemory]
// itself leaves, atomically and fsync'd once, so that many entries (a
// benchmark's, a migration's) cost one write instead of one fsync each.
// It fails while a store has dir open. An invalid entry writes
// nothing.
func WriteMemoryLog(dir string, es []Entry, now time.Time, retention time.Duration) error {
	if retention <= 0 {
		return errors.New("revoke: retention must be positive")
	}
	out := make([]Entry, len(es))
	for i, e := range es {
		if err := Check(e); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		out[i] = stamp(e, now, retention)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	return writeLog(filepath.Join(dir, MemoryFile), out)
}

// readLog replays the log at path; absent is empty. Anything but a
// regular file is refused before it is read: os.ReadFile of a named pipe
// waited in open(2) for a writer, and the start with it.
func readLog(path string) ([]Entry, error) {
	f, err := fileread.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("revoke: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("revoke: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("revoke: %s is %w", path, fileread.ErrNotRegular)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("revoke: %s: %w", path, err)
	}
	byID := map[string]Entry{}
	var order []string
	for n := 1; len(data) > 0; n++ {
		line, rest, complete := bytes.Cut(data, []byte{'\n'})
		data = rest
		if !complete {
			break // cut short by a crash before its fsync: never acknowledged
		}
		var r record
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("revoke: %s line %d: %w", path, n, err)
		}
		switch {
		case r.Op == "add" && r.Entry != nil:
			if _, ok := byID[r.Entry.ID]; !ok {
				order = append(order, r.Entry.ID)
			}
			byID[r.Entry.ID] = *r.Entry
		case r.Op == "delete":
			delete(byID, r.ID)
		default:
			return nil, fmt.Errorf("revoke: %s line %d: unknown record %q", path, n, r.Op)
		}
	}
	es := make([]Entry, 0, len(byID))
	for _, id := range order {
		if e, ok := byID[id]; ok {
			es = append(es, e)
			delete(byID, id)
		}
	}
	return es, nil
}

// writeLog replaces the log at path with the add records of es, atomically.
func writeLog(path string, es []Entry) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), MemoryFile+".tmp*")
	if err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	w := bufio.NewWriter(tmp)
	for i := range es {
		b, _ := json.Marshal(record{Op: "add", Entry: &es[i]})
		w.Write(append(b, '\n'))
	}
	err = w.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Index returns the index the request path checks.
func (m *Memory) Index() *Index { return m.idx }

// Retention returns how long an entry lives: a token that lives longer
// outlives the entries that name it.
func (m *Memory) Retention() time.Duration { return m.opts.Retention }

// Add stores e ([Check] refuses what it refuses, wrapping [ErrInvalid]):
// it returns once the entry is in the log and fsync'd, as stored (ID,
// CreatedAt, ExpiresAt, IssuedBefore set). A failed write wraps
// [ErrUnavailable]; nothing is added then.
func (m *Memory) Add(ctx context.Context, e Entry) (Entry, error) {
	if err := Check(e); err != nil {
		return Entry{}, err
	}
	now := m.opts.Now()
	e = stamp(e, now, m.opts.Retention)
	if err := m.append(record{Op: "add", Entry: &e}, func() { m.idx.Put(e, now) }); err != nil {
		return Entry{}, err
	}
	m.counts.add(e)
	return e, nil
}

// Delete lifts the entry id: [ErrNotFound] when no live entry has it. It
// returns once the lift is in the log and fsync'd.
func (m *Memory) Delete(ctx context.Context, id string) error {
	if _, ok := m.idx.Get(id, m.opts.Now()); !ok {
		return ErrNotFound
	}
	return m.append(record{Op: "delete", ID: id}, func() { m.idx.Remove(id) })
}

// List returns the live entries of issuer ("" every issuer), oldest first.
func (m *Memory) List(ctx context.Context, issuer string) ([]Entry, error) {
	return m.idx.List(issuer, m.opts.Now()), nil
}

// Added returns the number of entries added by this process, per issuer,
// source and kind.
func (m *Memory) Added() map[Added]uint64 { return m.counts.snapshot() }

// append writes r to the log, fsyncs it, then applies it (to the index);
// the log is compacted when it holds many more records than live entries.
func (m *Memory) append(r record, apply func()) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil {
		return ErrClosed
	}
	if m.broken != nil {
		return fmt.Errorf("%w: the log could not be restored after a failed write (restart to read it again): %w", ErrUnavailable, m.broken)
	}
	b = append(b, '\n')
	_, err = m.f.Write(b)
	if err == nil {
		err = m.f.Sync()
	}
	if err != nil {
		// Part of the record may be in the file: cut it off, or the next
		// record, acknowledged, would be glued to it in a line that does
		// not decode at start.
		if terr := m.f.Truncate(m.size); terr != nil {
			m.broken = terr
		} else if serr := m.f.Sync(); serr != nil {
			m.broken = serr
		}
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	m.size += int64(len(b))
	apply()
	m.lines++
	// At least as many records since the last rewrite as it kept: a log
	// kept long by entries past their expiry is not rewritten at each write.
	if live := m.idx.Len(); m.lines > 4096 && m.lines > 4*live && m.lines > 2*m.base {
		m.compact()
	}
	return nil
}

// compact rewrites the log with the entries it holds that are live or
// expired for less than a retention (keptInLog). A failure keeps the old
// log (whole: every record of it is still true).
func (m *Memory) compact() {
	path := filepath.Join(m.opts.Dir, MemoryFile)
	es, err := readLog(path)
	if err != nil {
		return // the old log is still the log
	}
	kept := keptInLog(es, m.opts.Now(), m.opts.Retention)
	if err := writeLog(path, kept); err != nil && !isUnlinked(path, m.f) {
		return // the old log is still the log
	}
	// Renamed (a failed directory fsync after the rename included): m.f
	// is no longer the log, and a write to it would be lost.
	f, size, err := openLog(path)
	if err != nil {
		if isUnlinked(path, m.f) {
			m.broken = err
		}
		return
	}
	m.f.Close()
	m.f, m.size, m.lines, m.base = f, size, len(kept), len(kept)
}

// isUnlinked reports whether path no longer names the file f (or either
// cannot be told).
func isUnlinked(path string, f *os.File) bool {
	cur, err := os.Stat(path)
	if err != nil {
		return true
	}
	old, err := f.Stat()
	return err != nil || !os.SameFile(cur, old)
}

// Close closes the log. Add and Delete fail afterwards with [ErrClosed].
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil {
		return nil
	}
	err := m.f.Close()
	m.f = nil
	m.lock.Close() // releases the flock
	return err
}

// Added labels the count of entries a store added: by issuer, source and
// kind.
type Added struct {
	Issuer string
	Source Source
	Kind   Kind
}

// counts counts the entries a store added.
type counts struct {
	mu sync.Mutex
	m  map[Added]uint64
}

func (c *counts) add(e Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[Added]uint64{}
	}
	c.m[Added{e.Issuer, e.Source, e.Kind}]++
}

func (c *counts) snapshot() map[Added]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[Added]uint64, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}
