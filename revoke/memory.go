package revoke

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
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
	lines  int        // records in the log
	counts counts
}

// record is one line of the log.
type record struct {
	Op    string `json:"op"` // "add" or "delete"
	Entry *Entry `json:"entry,omitempty"`
	ID    string `json:"id,omitempty"`
}

// OpenMemory reads the log in o.Dir (creating the directory and the log
// when absent), keeps the entries live at now, rewrites the log with just
// them (atomically: a temporary file, fsync, rename) and returns the store.
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
	m := &Memory{opts: o, idx: NewIndex(0)}
	path := filepath.Join(o.Dir, MemoryFile)
	es, err := readLog(path)
	if err != nil {
		return nil, err
	}
	now := o.Now()
	m.idx.Replace(es, now)
	live := m.idx.List("", now)
	if err := writeLog(path, live); err != nil {
		return nil, err
	}
	if m.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return nil, fmt.Errorf("revoke: %w", err)
	}
	m.lines = len(live)
	return m, nil
}

// readLog replays the log at path; absent is empty.
func readLog(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("revoke: %w", err)
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
	if _, err := m.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err := m.f.Sync(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	apply()
	m.lines++
	if live := m.idx.Len(); m.lines > 4096 && m.lines > 4*live {
		m.compact()
	}
	return nil
}

// compact rewrites the log with the live entries. A failure keeps the old
// log (whole: every record of it is still true).
func (m *Memory) compact() {
	path := filepath.Join(m.opts.Dir, MemoryFile)
	live := m.idx.List("", m.opts.Now())
	if writeLog(path, live) != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	m.f.Close()
	m.f, m.lines = f, len(live)
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
